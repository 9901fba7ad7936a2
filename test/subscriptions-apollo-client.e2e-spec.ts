import {
  createServer,
  connect as tcpConnect,
  type Server,
  type Socket as TcpSocket,
} from 'node:net';
import { ApolloClient, gql, InMemoryCache } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { EventsService, TOPICS } from '../src/events/events.service.js';
import { startApp, type TestApp } from './helpers/app.js';
import { createUser, unique, type CreatedUser } from './helpers/factories.js';
import { listening, until } from './subscriptions-helpers.js';

/**
 * A TCP proxy in front of the app whose connections can be cut (a train tunnel, a laptop lid): `down()`
 * destroys every open connection and refuses new ones until `up()`.
 */
async function cuttableProxy(target: URL) {
  const open = new Set<TcpSocket>();
  let isDown = false;
  let refused = 0;
  const server: Server = createServer((incoming) => {
    if (isDown) {
      refused += 1;
      incoming.destroy();
      return;
    }
    const outgoing = tcpConnect(Number(target.port), target.hostname);
    for (const s of [incoming, outgoing]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => undefined);
    }
    incoming.pipe(outgoing).pipe(incoming);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    /** Connections refused while down (the client's reconnect attempts). */
    get refused() {
      return refused;
    },
    down() {
      isDown = true;
      for (const s of open) {
        s.destroy();
      }
    },
    up() {
      isDown = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) {
          s.destroy();
        }
        server.close(() => resolve());
      }),
  };
}

const ROOM_MESSAGES = gql`
  subscription RoomMessages($roomId: ID!, $after: String) {
    messageAdded(roomId: $roomId, after: $after) {
      id
      content
      cursor
    }
  }
`;

interface Received {
  id: string;
  content: string;
  cursor: string;
}

/**
 * What docs/realtime.md shows an Apollo Client app doing: keep the cursor of the last message received
 * and, whenever the subscription ends (the socket dropped), subscribe again after it.
 */
function followRoom(
  client: ApolloClient,
  roomId: string,
  onMessage: (m: Received) => void,
  onResync: () => void,
) {
  let lastCursor: string | undefined;
  let stopped = false;
  let current: { unsubscribe(): void } | undefined;
  const start = () => {
    let ended = false;
    const restart = (error?: unknown) => {
      if (ended || stopped) {
        return;
      }
      ended = true;
      current?.unsubscribe();
      const code = (error as { errors?: { extensions?: { code?: string } }[] } | undefined)
        ?.errors?.[0]?.extensions?.code;
      if (code === 'RESYNC_REQUIRED') {
        onResync(); // reload through Room.messages, then follow from its last cursor
        return;
      }
      setTimeout(start, 100); // a real app backs off
    };
    current = client
      .subscribe<{ messageAdded: Received }>({
        query: ROOM_MESSAGES,
        variables: { roomId, after: lastCursor },
        fetchPolicy: 'no-cache',
      })
      .subscribe({
        next: ({ data, error }) => {
          if (error) {
            restart(error);
          } else if (data) {
            lastCursor = data.messageAdded.cursor;
            onMessage(data.messageAdded);
          }
        },
        error: restart,
        complete: () => restart(),
      });
  };
  start();
  return () => {
    stopped = true;
    current?.unsubscribe();
  };
}

describe('Apollo Client (GraphQLWsLink) resumes messageAdded after a dropped connection', () => {
  let t: TestApp;
  let author: CreatedUser;
  let reader: CreatedUser;
  let proxy: Awaited<ReturnType<typeof cuttableProxy>>;

  // GraphQLWsLink looks at the global WebSocket (a browser's); Node 20 has none: lend it ws for this file
  const hadWebSocket = 'WebSocket' in globalThis;
  beforeAll(async () => {
    if (!hadWebSocket) {
      (globalThis as Record<string, unknown>).WebSocket = WebSocket;
    }
    t = await startApp();
    [author, reader] = await Promise.all([createUser(t.url), createUser(t.url)]);
    proxy = await cuttableProxy(new URL(t.url));
  });
  afterAll(async () => {
    await proxy?.close();
    await t?.close();
    if (!hadWebSocket) {
      delete (globalThis as Record<string, unknown>).WebSocket;
    }
  });

  it('receives every message once, in order, across the drop', async () => {
    const room = await author.client.post('/api/v1/rooms', { name: unique('room-') });
    const roomId = room.body.data.id as string;
    const send = async (content: string) => {
      const res = await author.client.post(`/api/v1/rooms/${roomId}/messages`, { content });
      expect(res.status).toBe(201);
      return res.body.data.id as string;
    };
    const wsClient = createClient({
      url: `${proxy.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { Authorization: `Bearer ${reader.token}` },
      retryAttempts: 0, // a drop ends the subscription: followRoom resubscribes with its cursor
    });
    const client = new ApolloClient({
      link: new GraphQLWsLink(wsClient),
      cache: new InMemoryCache(),
    });
    const received: Received[] = [];
    let resyncs = 0;
    const stop = followRoom(
      client,
      roomId,
      (m) => received.push(m),
      () => (resyncs += 1),
    );
    try {
      await listening(t, TOPICS.messageAdded(roomId));
      const sent = [await send('one'), await send('two')];
      await until(() => received.length === 2);

      proxy.down(); // the tab loses its connection
      await until(() => t.app.get(EventsService).listenerCount(TOPICS.messageAdded(roomId)) === 0);
      for (const content of ['three', 'four', 'five']) {
        sent.push(await send(content)); // sent while it is away
      }
      const before = proxy.refused;
      await until(() => proxy.refused >= before + 2); // a few refused reconnects
      proxy.up();

      await until(
        () => received.length === 5,
        10_000,
        () => JSON.stringify(received),
      );
      await listening(t, TOPICS.messageAdded(roomId));
      sent.push(await send('six'));
      // a sentinel: a duplicate of an earlier message would have been sent before it, on the same
      // socket, so it would arrive first
      sent.push(await send('seven'));
      await until(
        () => received.length >= 7,
        5_000,
        () => JSON.stringify(received),
      );
      expect(received.map((m) => m.content)).toEqual([
        'one',
        'two',
        'three',
        'four',
        'five',
        'six',
        'seven',
      ]);
      expect(received.map((m) => m.id)).toEqual(sent);
      expect(resyncs).toBe(0);
    } finally {
      stop();
      await wsClient.dispose();
    }
  });
});
