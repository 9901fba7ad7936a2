import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { UsersModule } from '../users/users.module.js';
import { OrderEntity } from './order.entity.js';
import { OrdersController } from './orders.controller.js';
import { OrdersResolver, UserOrdersResolver } from './orders.resolver.js';
import { OrdersService } from './orders.service.js';
import { OrdersListController } from './orders-list.controller.js';
import { OrdersListService } from './orders-list.service.js';
import { OrdersRepository } from './orders.repository.js';
import { OrdersListResolver } from './orders-list.resolver.js';

@Module({
  imports: [TypeOrmModule.forFeature([OrderEntity]), UsersModule],
  controllers: [OrdersListController, OrdersController],
  providers: [
    OrdersService,
    OrdersRepository,
    OrdersListService,
    OrdersListResolver,
    OrdersResolver,
    UserOrdersResolver,
  ],
  exports: [OrdersService],
})
export class OrdersModule {}
