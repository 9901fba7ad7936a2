import net from 'node:net';

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
  try {
    conn.write(data);
    return await conn.response();
  } finally {
    conn.destroy();
  }
}
