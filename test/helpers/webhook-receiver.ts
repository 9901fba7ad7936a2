import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from './http.js';
import { waitFor } from './wait.js';

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

  /** Waits until `predicate` holds for the requests received so far (deadline scaled). */
  async waitFor(
    predicate: (received: ReceivedWebhook[]) => boolean,
    timeoutMs = 10_000,
  ): Promise<ReceivedWebhook[]> {
    return waitFor(() => predicate(this.received) && this.received, {
      timeoutMs,
      what: () =>
        `receiver: condition; got ${JSON.stringify(
          this.received.map((r) => [r.path, r.json?.type]),
        )}`,
    });
  }

  async close(): Promise<void> {
    for (const res of this.hanging) {
      res.destroy();
    }
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Polls `fn` until it returns a truthy value (deadline scaled). */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, timeoutMs = 10_000) {
  return waitFor(fn, { timeoutMs, intervalMs: 50 });
}

/** One row of an endpoint's delivery log (GET /webhooks/{id}/deliveries). */
export interface DeliveryRow {
  id: string;
  event_id: string;
  type: string;
  status: string;
  attempts: number;
  [k: string]: unknown;
}

/**
 * The delivery log of an endpoint once no row is pending (every attempt made and its outcome
 * written). What a test that asserts that something was NOT delivered waits for, after a sentinel:
 * an event committed after the forbidden ones has been seen to be fanned out (its delivery arrived,
 * on this endpoint or another). The fan-out takes undispatched events in commit (created_at) order
 * and writes the delivery rows of all endpoints in one transaction, and every attempt is claimed on
 * its row before it is sent; so by then a forbidden event has a row in this log if it was due at all,
 * and every row was sent as many times as its `attempts` say.
 */
export async function settledDeliveries(admin: Client, endpointId: string): Promise<DeliveryRow[]> {
  return waitFor(
    async () => {
      const res = await admin.get(`/api/v1/webhooks/${endpointId}/deliveries?limit=100`);
      const rows = res.body.data as DeliveryRow[];
      return rows.every((d) => d.status !== 'pending') && rows;
    },
    { intervalMs: 50, what: `the delivery log of ${endpointId} without pending rows` },
  );
}
