import { Global, Module } from '@nestjs/common';
import { PublicUrl } from './public-url.js';

@Global()
@Module({ providers: [PublicUrl], exports: [PublicUrl] })
export class CommonModule {}
