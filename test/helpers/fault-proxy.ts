import net from 'node:net';

/**
 * What the proxy does with the bytes of its connections:
 * - `pass`: forwards them both ways;
 * - `pause`: holds them (a stalled server or network): nothing is lost, `resume()` delivers them;
 * - `blackhole`: swallows them and never answers (a partition): connections stay open and silent,
 *   new ones are accepted and go nowhere.
 */
export type FaultMode = 'pass' | 'pause' | 'blackhole';

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  /** Bytes held while paused, per direction. */
  toUpstream: Buffer[];
  toClient: Buffer[];
  /** Accepted during a black hole: never connected upstream. */
  holed: boolean;
}

/**
 * A TCP proxy between the app and a server it depends on (PostgreSQL, Redis), for the fault suite:
 * `drop()` cuts every open connection (a network blip, a restarted server), `pause()`/`resume()`
 * stalls them, `blackhole()`/`heal()` swallows everything. The app is pointed at `port` instead of
 * the server's.
 */
export class FaultProxy {
  private mode: FaultMode = 'pass';
  private readonly pairs = new Set<Pair>();
  /** Connections accepted so far (a reconnecting client shows here). */
  accepted = 0;

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(target: { host: string; port: number }): Promise<FaultProxy> {
    const holder: { proxy?: FaultProxy } = {};
    const server = net.createServer((client) => holder.proxy!.accept(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    holder.proxy = new FaultProxy(server, (server.address() as net.AddressInfo).port, target);
    return holder.proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** Open connections. */
  get connections(): number {
    return this.pairs.size;
  }

  private accept(client: net.Socket): void {
    this.accepted += 1;
    const holed = this.mode === 'blackhole';
    const upstream = holed ? new net.Socket() : net.connect(this.target.port, this.target.host);
    const pair: Pair = { client, upstream, toUpstream: [], toClient: [], holed };
    this.pairs.add(pair);
    const end = () => {
      if (this.pairs.delete(pair)) {
        client.destroy();
        upstream.destroy();
      }
    };
    client.on('error', end).on('close', end);
    client.on('data', (chunk: Buffer) => this.forward(pair, chunk, 'up'));
    if (!holed) {
      upstream.on('error', end).on('close', end);
      upstream.on('data', (chunk: Buffer) => this.forward(pair, chunk, 'down'));
    }
  }

  private forward(pair: Pair, chunk: Buffer, direction: 'up' | 'down'): void {
    if (this.mode === 'blackhole' || pair.holed) {
      return;
    }
    if (this.mode === 'pause') {
      (direction === 'up' ? pair.toUpstream : pair.toClient).push(chunk);
      return;
    }
    (direction === 'up' ? pair.upstream : pair.client).write(chunk);
  }

  /** Cuts every open connection now (both sides see a reset); new ones are accepted as before. */
  drop(): number {
    const n = this.pairs.size;
    for (const pair of [...this.pairs]) {
      this.pairs.delete(pair);
      pair.client.resetAndDestroy();
      pair.upstream.destroy();
    }
    return n;
  }

  /** Holds every byte from now on, in both directions, until `resume()`. */
  pause(): void {
    this.mode = 'pause';
  }

  /** Delivers what was held and forwards again. */
  resume(): void {
    this.mode = 'pass';
    for (const pair of this.pairs) {
      for (const chunk of pair.toUpstream.splice(0)) {
        pair.upstream.write(chunk);
      }
      for (const chunk of pair.toClient.splice(0)) {
        pair.client.write(chunk);
      }
    }
  }

  /** Swallows everything from now on: connections stay open and nothing answers. */
  blackhole(): void {
    this.mode = 'blackhole';
  }

  /**
   * Ends a black hole: the connections that lived through it are cut (their bytes are lost, as a
   * peer's retransmissions would have given up), new ones pass.
   */
  heal(): void {
    this.mode = 'pass';
    this.drop();
  }

  async close(): Promise<void> {
    this.drop();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
