import { Global, Module } from '@nestjs/common';
import { PublicUrl } from './public-url.js';
import { ShutdownState } from './shutdown.js';

@Global()
@Module({ providers: [PublicUrl, ShutdownState], exports: [PublicUrl, ShutdownState] })
export class CommonModule {}
