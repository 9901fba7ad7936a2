import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got. */
export interface ReceivedWebhook {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  json: any;
  at: number;
}

/** What the receiver answers a request: a status (and optional headers/body), or hang. */
export type Answer =
  | { status: number; headers?: Record<string, string>; body?: string | Buffer }
  | 'hang';

/**
 * A real HTTP receiver on loopback: records every request and answers as `answer` says (200 by
 * default). `url(path)` is the address to register.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  answer: (req: ReceivedWebhook, nth: number) => Answer = () => ({ status: 200 });
  private server!: Server;
  private readonly hanging = new Set<ServerResponse>();

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        const got: ReceivedWebhook = {
          path: req.url ?? '/',
          headers: req.headers,
          body,
          json,
          at: Date.now(),
        };
        this.received.push(got);
        const answer = this.answer(got, this.received.filter((r) => r.path === got.path).length);
        if (answer === 'hang') {
          this.hanging.add(res);
          res.on('close', () => this.hanging.delete(res));
          return;
        }
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? '');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  on(path: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Waits until `predicate` holds for the requests received so far. */
  async waitFor(
    predicate: (received: ReceivedWebhook[]) => boolean,
    timeoutMs = 10_000,
  ): Promise<ReceivedWebhook[]> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.received)) {
      if (Date.now() > deadline) {
        throw new Error(
          `receiver: condition not met within ${timeoutMs} ms; got ${JSON.stringify(
            this.received.map((r) => [r.path, r.json?.type]),
          )}`,
        );
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    return this.received;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) {
      res.destroy();
    }
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Polls `fn` until it returns a truthy value. */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error('condition not met in time');
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
