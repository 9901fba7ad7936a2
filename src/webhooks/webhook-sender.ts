import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
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
 * One POST to a receiver, connected to the address checked beforehand (never resolved again),
 * redirects not followed (a 3xx is a failed attempt), the answer read up to 64 KB, and the whole
 * exchange bounded by `timeoutMs`. Runs off the request path: nothing the API serves waits on it.
 */
export class WebhookSender {
  private readonly httpAgent: HttpAgent;
  private readonly httpsAgent: HttpsAgent;

  /** `maxSockets`: connections kept per receiver origin, as many as attempts in flight at most. */
  constructor(
    private readonly timeoutMs: number,
    maxSockets = 64,
  ) {
    this.httpAgent = new HttpAgent({ keepAlive: true, maxSockets });
    this.httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets });
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
    return new Promise<SendResult>((resolve) => {
      let settled = false;
      const finish = (result: Omit<SendResult, 'durationMs'>) => {
        if (!settled) {
          settled = true;
          clearTimeout(timer);
          resolve({ ...result, durationMs: Math.round(performance.now() - started) });
        }
      };
      const req = request(
        target.url,
        {
          method: 'POST',
          agent: secure ? this.httpsAgent : this.httpAgent,
          lookup: pinned,
          headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        },
        (res: IncomingMessage) => {
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
      const timer = setTimeout(() => {
        finish({
          statusCode: null,
          error: `no answer within ${this.timeoutMs} ms`,
          timedOut: true,
        });
        req.destroy();
      }, this.timeoutMs);
      req.on('error', (err: NodeJS.ErrnoException) =>
        finish({ statusCode: null, error: err.code ?? err.message, timedOut: false }),
      );
      req.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
