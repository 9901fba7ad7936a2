import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { ResolvedTarget } from './webhook-url-guard.js';

/** The most of a receiver's response body that is read; the rest is dropped with the connection. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface SendResult {
  /** The receiver's status, or null when no response arrived (timeout, connection error). */
  statusCode: number | null;
  durationMs: number;
  /** Why no response counted (`timeout`, a network error), null when one arrived. */
  error: string | null;
  timedOut: boolean;
}

/**
 * Errors of a request written on a kept-alive connection that the receiver had closed meanwhile
 * (its idle timeout ran out as the request left): the request never reached it.
 */
const STALE_CONNECTION = new Set(['ECONNRESET', 'EPIPE']);

/**
 * One POST to a receiver, connected to the address checked beforehand (never resolved again),
 * redirects not followed (a 3xx is a failed attempt), the answer read up to 64 KB, and the whole
 * exchange bounded by `timeoutMs`. Runs off the request path: nothing the API serves waits on it.
 *
 * Connections are kept alive between attempts. One that the receiver closed while idle can be
 * handed out just as its close arrives: the request then fails at once with ECONNRESET before any
 * answer (Node's documented `request.reusedSocket` race). Such a request is sent again once, on a
 * new connection, within the same attempt and time bound: otherwise the receiver would see one
 * request for an attempt logged twice.
 */
export class WebhookSender {
  /** Per scheme: the kept-alive connections, and the agent of the resend (a new connection each time). */
  private readonly agents: Record<'http' | 'https', { kept: HttpAgent; fresh: HttpAgent }>;

  /** `maxSockets`: connections kept per receiver origin, as many as attempts in flight at most. */
  constructor(
    private readonly timeoutMs: number,
    maxSockets = 64,
  ) {
    this.agents = {
      http: {
        kept: new HttpAgent({ keepAlive: true, maxSockets }),
        fresh: new HttpAgent({ keepAlive: false, maxSockets }),
      },
      https: {
        kept: new HttpsAgent({ keepAlive: true, maxSockets }),
        fresh: new HttpsAgent({ keepAlive: false, maxSockets }),
      },
    };
  }

  send(target: ResolvedTarget, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    const pinned: LookupFunction = (_host, options, callback) => {
      if ((options as { all?: boolean }).all) {
        (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [
          { address: target.address, family: target.family },
        ]);
      } else {
        callback(null, target.address, target.family);
      }
    };
    const secure = target.url.protocol === 'https:';
    const request = secure ? httpsRequest : httpRequest;
    const agents = this.agents[secure ? 'https' : 'http'];
    return new Promise<SendResult>((resolve) => {
      let settled = false;
      let current: ClientRequest | undefined;
      const finish = (result: Omit<SendResult, 'durationMs'>) => {
        if (!settled) {
          settled = true;
          clearTimeout(timer);
          resolve({ ...result, durationMs: Math.round(performance.now() - started) });
        }
      };
      const post = (fresh: boolean) => {
        let answered = false;
        const req = request(
          target.url,
          {
            method: 'POST',
            agent: fresh ? agents.fresh : agents.kept,
            lookup: pinned,
            headers: { ...headers, 'content-length': Buffer.byteLength(body) },
          },
          (res: IncomingMessage) => {
            answered = true;
            let read = 0;
            res.on('data', (chunk: Buffer) => {
              read += chunk.length;
              if (read > MAX_RESPONSE_BYTES) {
                res.destroy();
                finish({ statusCode: res.statusCode ?? null, error: null, timedOut: false });
              }
            });
            res.on('end', () =>
              finish({ statusCode: res.statusCode ?? null, error: null, timedOut: false }),
            );
            res.on('error', () =>
              finish({ statusCode: res.statusCode ?? null, error: null, timedOut: false }),
            );
          },
        );
        current = req;
        req.on('error', (err: NodeJS.ErrnoException) => {
          if (
            !fresh &&
            !answered &&
            !settled &&
            req.reusedSocket &&
            STALE_CONNECTION.has(err.code ?? '')
          ) {
            post(true);
            return;
          }
          finish({ statusCode: null, error: err.code ?? err.message, timedOut: false });
        });
        req.end(body);
      };
      const timer = setTimeout(() => {
        finish({
          statusCode: null,
          error: `no answer within ${this.timeoutMs} ms`,
          timedOut: true,
        });
        current?.destroy();
      }, this.timeoutMs);
      post(false);
    });
  }

  close(): void {
    for (const { kept, fresh } of Object.values(this.agents)) {
      kept.destroy();
      fresh.destroy();
    }
  }
}
