/** A room as the services hand it out: camelCase, transport-neutral. */
export interface Room {
  id: string;
  name: string;
  createdAt: string;
}

/** A message as the services hand it out (and as events carry it). */
export interface Message {
  id: string;
  roomId: string;
  authorId: string;
  content: string;
  createdAt: string;
}
