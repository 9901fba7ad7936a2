import net from 'node:net';
import { checkResponse } from './openapi.js';

/**
 * Refusals of Node's HTTP parser (src/http/http-hooks.ts clientErrorHandler): 408 and 431 are
 * answered before the request's head is complete, and "Malformed HTTP request" (400) for bytes
 * that are not HTTP. No route, hence no operation, is involved.
 */
const PARSER_REFUSALS = new Set([408, 431]);
const MALFORMED = /"Malformed HTTP request"/;

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Parses one HTTP/1.1 response (Content-Length framed) from the start of `text`. */
export function parseResponse(text: string): RawResponse & { rest: string } {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) {
    throw new Error(`no complete response head in ${JSON.stringify(text.slice(0, 200))}`);
  }
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = text.slice(end + 4, end + 4 + length);
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    body,
    rest: text.slice(end + 4 + length),
  };
}

/** A raw TCP connection to the app: write bytes as they are, read everything the server sends. */
export class RawConnection {
  readonly socket: net.Socket;
  private received = '';
  private readonly openedAt = Date.now();
  readonly closed: Promise<number>;
  private waiters: (() => void)[] = [];

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.received += chunk;
      this.wake();
    });
    // the promise resolves with the connection's lifetime in ms when the server closes it
    this.closed = new Promise((resolve) =>
      socket.on('close', () => {
        this.wake();
        resolve(Date.now() - this.openedAt);
      }),
    );
    socket.on('error', () => undefined);
  }

  static open(base: string): Promise<RawConnection> {
    const { hostname, port } = new URL(base);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    waiters.forEach((w) => w());
  }

  write(data: string): void {
    this.socket.write(data, 'latin1');
  }

  get text(): string {
    return this.received;
  }

  get isClosed(): boolean {
    return this.socket.destroyed || this.socket.readyState === 'closed';
  }

  /** Waits for one complete response (consumed), or fails after `timeoutMs`. */
  async response(timeoutMs = 5_000): Promise<RawResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const { rest, ...res } = parseResponse(this.received);
        const needed = Number(res.headers['content-length'] ?? 0);
        if (res.body.length >= needed) {
          this.received = rest;
          return res;
        }
      } catch {
        // not complete yet
      }
      if (this.isClosed) {
        throw new Error(`closed before a full response: ${JSON.stringify(this.received)}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`no response within ${timeoutMs} ms: ${JSON.stringify(this.received)}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** Sends `data` on a fresh connection and returns the first response (the server then closes). */
export async function rawExchange(base: string, data: string): Promise<RawResponse> {
  const conn = await RawConnection.open(base);
  let res: RawResponse;
  try {
    conn.write(data);
    res = await conn.response();
  } finally {
    conn.destroy();
  }
  // the answer must be one the OpenAPI document describes, like every REST response of the suite,
  // unless Node's HTTP parser refused the bytes before a request existed (test/helpers/openapi.ts)
  const line = /^([A-Z]+) (\/\S*) HTTP\/1\.[01]\r\n/.exec(data);
  if (line && !PARSER_REFUSALS.has(res.status) && !MALFORMED.test(res.body)) {
    await checkResponse(base, {
      method: line[1],
      url: line[2],
      status: res.status,
      contentType: res.headers['content-type'] ?? null,
      text: res.body,
    });
  }
  return res;
}
