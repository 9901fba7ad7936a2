import type { GqlContext } from '../graphql/context.js';
import { byId } from '../graphql/loaders.js';
import type { Room } from '../domain/message.js';
import type { RoomsService } from './rooms.service.js';

/** Rooms by id, batched per request (a list of messages names few rooms). */
export function roomLoader(ctx: GqlContext, rooms: RoomsService) {
  return ctx.loaders.get<string, Room | undefined>('roomById', async (ids) =>
    byId(ids, await rooms.findByIds(ids)),
  );
}
