import type { GraphQLError } from 'graphql';

/**
 * What a replaying subscription (`messageAdded(after:)`) may take from its socket and instance
 * (docs/realtime.md, "Replays are bounded"): the identity's budget, charged for a page before the
 * page is read; one of the identity's and the instance's replay slots; and the socket's account of
 * queued event bytes, bounded by WS_SEND_BUFFER_BYTES.
 */
export interface ReplayGate {
  /** Waits for a replay slot; resolves to its release. Rejects once `signal` aborts. */
  slot(signal: AbortSignal): Promise<() => void>;
  /** Spends `count` events' cost from the identity's budget: the RATE_LIMITED error, or undefined. */
  charge(count: number): Promise<GraphQLError | undefined>;
  /** The socket's queued event bytes. */
  queue: QueuedBytes;
}

/** The bytes of events queued for one socket (by all of its streams), against a limit. */
export class QueuedBytes {
  private used = 0;

  constructor(readonly limit: number) {}

  get bytes(): number {
    return this.used;
  }

  fits(bytes: number): boolean {
    return this.used + bytes <= this.limit;
  }

  add(bytes: number): void {
    this.used += bytes;
  }

  remove(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}

/** A source event that ends its subscription with a refusal (the replay's charge did not fit). */
export class RefusedEvent {
  constructor(readonly error: GraphQLError) {}
}

const PRECHARGED = Symbol.for('atrium.precharged');

/** Marks a source event as charged already (a replay page is charged before it is read). */
export function markPrecharged<T extends object>(event: T): T {
  Object.defineProperty(event, PRECHARGED, { value: true, enumerable: false });
  return event;
}

export function isPrecharged(event: unknown): boolean {
  return typeof event === 'object' && event !== null && PRECHARGED in event;
}

interface Waiter {
  identity: string;
  grant: (release: () => void) => void;
}

/**
 * Replays running at once: at most `perIdentity` per identity and `perInstance` on the instance;
 * more wait, first come first served (a waiter whose identity is at its cap lets later ones of other
 * identities pass).
 */
export class ReplaySlots {
  private running = 0;
  private readonly byIdentity = new Map<string, number>();
  private readonly waiters: Waiter[] = [];

  constructor(
    readonly perIdentity = 2,
    readonly perInstance = 32,
  ) {}

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiters.length;
  }

  acquire(identity: string, signal: AbortSignal): Promise<() => void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(new Error('replay ended'));
        return;
      }
      const waiter: Waiter = { identity, grant: resolve };
      const onAbort = () => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) {
          this.waiters.splice(at, 1);
          reject(new Error('replay ended'));
        }
      };
      signal.addEventListener('abort', onAbort, { once: true });
      waiter.grant = (release) => {
        signal.removeEventListener('abort', onAbort);
        resolve(release);
      };
      this.waiters.push(waiter);
      this.dispatch();
    });
  }

  private dispatch(): void {
    for (let i = 0; i < this.waiters.length && this.running < this.perInstance; ) {
      const waiter = this.waiters[i];
      const mine = this.byIdentity.get(waiter.identity) ?? 0;
      if (mine >= this.perIdentity) {
        i += 1;
        continue;
      }
      this.waiters.splice(i, 1);
      this.running += 1;
      this.byIdentity.set(waiter.identity, mine + 1);
      let released = false;
      waiter.grant(() => {
        if (released) {
          return;
        }
        released = true;
        this.running -= 1;
        const left = (this.byIdentity.get(waiter.identity) ?? 1) - 1;
        if (left <= 0) {
          this.byIdentity.delete(waiter.identity);
        } else {
          this.byIdentity.set(waiter.identity, left);
        }
        this.dispatch();
      });
    }
  }
}

/** The gate of each WebSocket operation's context (set by the WebSocket server as it prepares one). */
const gates = new WeakMap<object, ReplayGate>();

export function setReplayGate(context: object, gate: ReplayGate): void {
  gates.set(context, gate);
}

export function replayGateOf(context: object): ReplayGate | undefined {
  return gates.get(context);
}
