import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebhookSender } from './webhook-sender.js';

/**
 * A receiver on raw TCP, so that a kept-alive connection can be closed exactly when the next request
 * arrives on it: what a receiver does whose idle timeout runs out as the request leaves the sender.
 * `mode` decides what is answered:
 * - `answer`: every request, 200 (keep-alive);
 * - `reset-reused`: each connection answers its first request and resets on the next one;
 * - `reset-later-connections`: the first connection as `reset-reused`, every later one resets on
 *   its first request.
 */
class RawReceiver {
  /** Per connection, the requests whose headers arrived, and whether each was answered. */
  readonly connections: { requests: number; answered: number }[] = [];
  private server!: Server;

  constructor(private readonly mode: 'answer' | 'reset-reused' | 'reset-later-connections') {}

  async start(): Promise<this> {
    this.server = createServer((socket: Socket) => {
      const conn = { requests: 0, answered: 0 };
      this.connections.push(conn);
      let buffered = '';
      socket.on('error', () => undefined);
      socket.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('latin1');
        // one request per `\r\n\r\n` + a body of the Content-Length it announced
        for (;;) {
          const head = buffered.indexOf('\r\n\r\n');
          if (head < 0) {
            return;
          }
          const length = Number(/content-length: *(\d+)/i.exec(buffered.slice(0, head))?.[1] ?? 0);
          if (buffered.length < head + 4 + length) {
            return;
          }
          buffered = buffered.slice(head + 4 + length);
          conn.requests += 1;
          const later = this.connections.length > 1 && this.mode === 'reset-later-connections';
          if ((conn.requests > 1 && this.mode !== 'answer') || later) {
            socket.resetAndDestroy();
            return;
          }
          conn.answered += 1;
          socket.write(
            'HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n',
          );
        }
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  target() {
    const { port } = this.server.address() as AddressInfo;
    return {
      url: new URL(`http://127.0.0.1:${port}/hook`),
      address: '127.0.0.1',
      family: 4 as const,
    };
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe('WebhookSender', () => {
  let sender: WebhookSender | undefined;
  let receiver: RawReceiver | undefined;
  afterEach(async () => {
    sender?.close();
    await receiver?.close();
  });

  it('keeps the connection alive between attempts', async () => {
    receiver = await new RawReceiver('answer').start();
    sender = new WebhookSender(2_000, 4);
    for (let i = 0; i < 3; i += 1) {
      expect((await sender.send(receiver.target(), {}, '{}')).statusCode).toBe(200);
    }
    expect(receiver.connections).toEqual([{ requests: 3, answered: 3 }]);
  });

  it('sends a request again, once and on a new connection, when its kept-alive connection was closed under it', async () => {
    receiver = await new RawReceiver('reset-reused').start();
    sender = new WebhookSender(2_000, 4);
    expect((await sender.send(receiver.target(), {}, '{"n":1}')).statusCode).toBe(200);
    const second = await sender.send(receiver.target(), {}, '{"n":2}');
    expect(second).toMatchObject({ statusCode: 200, error: null, timedOut: false });
    // the first connection took the second request and dropped it unanswered; a new one answered it
    expect(receiver.connections).toEqual([
      { requests: 2, answered: 1 },
      { requests: 1, answered: 1 },
    ]);
  });

  it('sends again only once: when the new connection fails too, the attempt fails', async () => {
    receiver = await new RawReceiver('reset-later-connections').start();
    sender = new WebhookSender(2_000, 4);
    expect((await sender.send(receiver.target(), {}, '{}')).statusCode).toBe(200);
    const result = await sender.send(receiver.target(), {}, '{}');
    expect(result).toMatchObject({ statusCode: null, error: 'ECONNRESET', timedOut: false });
    expect(receiver.connections).toEqual([
      { requests: 2, answered: 1 },
      { requests: 1, answered: 0 },
    ]);
  });

  it('does not send again when a first request on a new connection is reset', async () => {
    receiver = await new RawReceiver('reset-later-connections').start();
    sender = new WebhookSender(2_000, 4);
    // the first connection answers; close it so the next request opens a second one
    expect((await sender.send(receiver.target(), {}, '{}')).statusCode).toBe(200);
    sender.close();
    sender = new WebhookSender(2_000, 4);
    const result = await sender.send(receiver.target(), {}, '{}');
    expect(result).toMatchObject({ statusCode: null, error: 'ECONNRESET', timedOut: false });
    expect(receiver.connections.slice(1)).toEqual([{ requests: 1, answered: 0 }]);
  });
});
