import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { UsersModule } from '../users/users.module.js';
import { OrderEntity } from './order.entity.js';
import { OrdersController } from './orders.controller.js';
import { OrdersResolver, UserOrdersResolver } from './orders.resolver.js';
import { OrdersRepository } from './orders.repository.js';
import { OrdersService } from './orders.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([OrderEntity]), UsersModule],
  controllers: [OrdersController],
  providers: [OrdersService, OrdersRepository, OrdersResolver, UserOrdersResolver],
  exports: [OrdersService],
})
export class OrdersModule {}
