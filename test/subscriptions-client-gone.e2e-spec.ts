import type { DestinationStream } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startApp, type TestApp } from './helpers/app.js';
import { createUser, type CreatedUser } from './helpers/factories.js';
import { client } from './helpers/http.js';
import { connectionParams, newRoom, until } from './subscriptions-helpers.js';

type Line = Record<string, unknown> & { level: number; msg?: string };

/** The application's log output, line by line. */
class CapturedLog implements DestinationStream {
  readonly lines: Line[] = [];

  write(chunk: string): void {
    for (const text of chunk.split('\n')) {
      if (text !== '') {
        this.lines.push(JSON.parse(text) as Line);
      }
    }
  }
}

const INFO = 30;
const ERROR = 50;
const GONE = 'subscriber went away while an event was being sent';

/**
 * A client that resets its connection while the server writes it events (a replay of large
 * messages) is an info line, not an "unexpected GraphQL error" (docs/realtime.md, "Events metrics").
 */
describe('a subscriber that drops its socket mid-send', () => {
  let t: TestApp;
  let author: CreatedUser;
  const log = new CapturedLog();

  beforeAll(async () => {
    t = await startApp({ LOG_LEVEL: 'info' }, { logDestination: log });
    author = await createUser(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('is logged at info, and no error is logged, when it resets the connection during a replay', async () => {
    const roomId = await newRoom(author);
    const big = 'y'.repeat(3_990);
    for (let i = 0; i < 300; i++) {
      const res = await client(t.url, { bearer: author.token }).post(
        `/api/v1/rooms/${roomId}/messages`,
        { content: `${i} ${big}` },
      );
      expect(res.status).toBe(201);
    }
    const after = Buffer.from(JSON.stringify(['msg', roomId, 1])).toString('base64url');
    // a few clients, each resetting its TCP connection (RST) as soon as the first event arrives,
    // while the server is still writing the replay to it
    for (let attempt = 0; attempt < 10 && !log.lines.some((l) => l.msg === GONE); attempt++) {
      const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
      await new Promise((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('error', reject);
      });
      ws.on('error', () => undefined);
      const first = new Promise<void>((resolve) =>
        ws.on('message', (data: Buffer) => {
          const text = data.toString('utf8', 0, 60);
          if (text.includes('connection_ack')) {
            for (let op = 0; op < 5; op++) {
              ws.send(
                JSON.stringify({
                  id: String(op),
                  type: 'subscribe',
                  payload: {
                    query:
                      'subscription($r: ID!, $a: String) { messageAdded(roomId: $r, after: $a) { content } }',
                    variables: { r: roomId, a: after },
                  },
                }),
              );
            }
          } else if (text.includes('"next"')) {
            resolve();
          }
        }),
      );
      ws.send(
        JSON.stringify({
          type: 'connection_init',
          payload: connectionParams({ bearer: author.token }),
        }),
      );
      await first;
      const closedBefore = log.lines.filter((l) => l.msg === 'websocket closed').length;
      (ws as unknown as { _socket: { resetAndDestroy(): void } })._socket.resetAndDestroy();
      // the server's side of the socket closes (its log line is the sentinel)
      await until(
        () => log.lines.filter((l) => l.msg === 'websocket closed').length > closedBefore,
        10_000,
      );
    }
    const gone = log.lines.filter((l) => l.msg === GONE);
    expect(gone.length).toBeGreaterThan(0);
    expect(gone.every((l) => l.level === INFO)).toBe(true);
    expect(log.lines.filter((l) => l.level >= ERROR)).toEqual([]);
  }, 120_000);
});
