import type { Caller } from '../identity/caller.js';
import type { CredentialSession, CredentialsService } from '../identity/credentials.service.js';

/** Close code for a socket whose credentials lapsed (role gone, user deleted, key revoked, expired). */
export const CLOSE_CREDENTIALS_LAPSED = 4403;

/** setTimeout's largest delay; a credential expiring later is caught by the per-operation check. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The caller of one WebSocket connection, kept current: each operation and each subscription event
 * asks `current()`, which re-establishes the caller from its credentials with the look-ups a REST
 * request makes (the user's role and deletion, the key's revocation and expiry, the token's
 * expiry). Concurrent asks share one check (one event fanned out to many subscriptions on a socket
 * costs one look-up). One SocketCaller serves every socket opened with the same credential
 * (`CurrentRights`), so an event fanned out to a thousand sockets of one credential costs one look-up,
 * not a thousand. When the credentials have lapsed, `onLapse` closes the sockets (4403); a
 * credential with an expiry (a JWT's `exp`, a key's `expires_at`) also closes it on time by a timer,
 * and an idle socket is checked every `recheckIntervalMs` (WS_RECHECK_INTERVAL_S), so a deleted user
 * or a revoked key does not keep a quiet socket open either.
 */
export class SocketCaller {
  private caller: Caller;
  private inFlight?: Promise<Caller | undefined>;
  private lapsed = false;
  private readonly timer?: NodeJS.Timeout;
  private readonly interval: NodeJS.Timeout;
  private readonly lapseListeners = new Set<(reason: string) => void>();

  constructor(
    caller: Caller,
    private readonly session: CredentialSession,
    private readonly door: CredentialsService,
    onLapse: (reason: string) => void,
    recheckIntervalMs: number,
  ) {
    this.caller = caller;
    this.lapseListeners.add(onLapse);
    this.interval = setInterval(() => {
      this.current().catch(() => undefined); // a failed look-up (database down) closes nothing
    }, recheckIntervalMs);
    this.interval.unref();
    if (caller.expiresAt !== undefined) {
      const delay = caller.expiresAt - Date.now();
      if (delay <= MAX_TIMER_MS) {
        this.timer = setTimeout(() => this.lapse('Credentials expired'), Math.max(0, delay));
        this.timer.unref();
      }
    }
  }

  /** The caller as of its last check (no look-up). */
  get last(): Caller {
    return this.caller;
  }

  /** The caller with its current rights, or undefined (and the socket closed) once lapsed. */
  current(): Promise<Caller | undefined> {
    if (this.lapsed) {
      return Promise.resolve(undefined);
    }
    this.inFlight ??= this.door
      .recheck(this.caller, this.session)
      .then((caller) => {
        if (caller) {
          this.caller = caller;
        } else {
          this.lapse('Credentials no longer valid');
        }
        return caller;
      })
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
  }

  /** False once the credentials have lapsed (a new socket then gets a SocketCaller of its own). */
  get valid(): boolean {
    return !this.lapsed;
  }

  /** Another socket of the same credential: closed too when it lapses. */
  attach(onLapse: (reason: string) => void): void {
    this.lapseListeners.add(onLapse);
  }

  /** A socket closed; returns how many are left. */
  detach(onLapse: (reason: string) => void): number {
    this.lapseListeners.delete(onLapse);
    return this.lapseListeners.size;
  }

  private lapse(reason: string): void {
    if (!this.lapsed) {
      this.lapsed = true;
      this.dispose();
      for (const listener of [...this.lapseListeners]) {
        listener(reason);
      }
    }
  }

  dispose(): void {
    clearTimeout(this.timer);
    clearInterval(this.interval);
  }
}

/**
 * The SocketCallers of this instance, one per credential (scheme and secret): sockets opened with the
 * same token, key or password share their caller, its checks and its timers.
 */
export class CurrentRights {
  private readonly byCredential = new Map<string, SocketCaller>();

  /**
   * The SocketCaller of `session`'s credential (made from `caller` when none is open), with
   * `onLapse` registered; `release` with the same `onLapse` when the socket closes.
   */
  acquire(
    caller: Caller,
    session: CredentialSession,
    onLapse: (reason: string) => void,
    make: () => SocketCaller,
  ): SocketCaller {
    const key = credentialKey(session);
    const existing = this.byCredential.get(key);
    if (existing?.valid && existing.last.userId === caller.userId) {
      existing.attach(onLapse);
      return existing;
    }
    const created = make();
    this.byCredential.set(key, created);
    return created;
  }

  release(
    session: CredentialSession,
    rights: SocketCaller,
    onLapse: (reason: string) => void,
  ): void {
    if (rights.detach(onLapse) === 0) {
      rights.dispose();
      const key = credentialKey(session);
      if (this.byCredential.get(key) === rights) {
        this.byCredential.delete(key);
      }
    }
  }
}

function credentialKey(session: CredentialSession): string {
  return `${session.verifier.scheme}\u0000${session.credential}`;
}
