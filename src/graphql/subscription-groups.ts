import { execute, type ExecutionArgs, type ExecutionResult, type GraphQLError } from 'graphql';
import type { WebSocket } from 'ws';
import type { LiveSource } from '../events/live-source.js';
import type { SocketRef } from '../rate-limit/socket-limits.service.js';
import type { GqlContext } from './context.js';

/**
 * Bytes waiting in one socket's send buffer past which it is a slow consumer: it is closed with
 * CLOSE_TOO_SLOW instead of buffering more (a client that stopped reading must not grow the server's
 * memory without bound). Resubscribing with the last `cursor` as `after` replays what it missed.
 */
export const WS_SEND_BUFFER_LIMIT = 4 * 1024 * 1024;
/** "Try Again Later": graphql-ws clients reconnect on it (the slow consumer's socket). */
export const CLOSE_TOO_SLOW = 1013;

/** The ws send options of an event frame: text, never compressed, no per-send callback. */
const SEND_OPTIONS = { binary: false, compress: false, fin: true } as const;

/** What a group needs from the WebSocket server (graphql-ws.server.ts). */
export interface GroupHooks {
  /** `cost` points per socket for one event: each socket's refusal by index (see chargeEvents). */
  charge(sockets: readonly SocketRef[], cost: number): Promise<(GraphQLError | undefined)[]>;
  /** The JSON text of the `payload` sent for `result` (errors formatted, size capped). */
  serialize(result: ExecutionResult): string;
  /** The error that ends a subscription whose credentials have lapsed. */
  lapsed(): GraphQLError;
  /** A result with errors was sent to a member (telemetry). */
  sentErrors(member: GroupMember, result: ExecutionResult): void;
}

/**
 * One subscriber of a group: the async iterator graphql-ws runs the operation with. It yields nothing
 * while the subscription is live (the group writes the events to the socket itself); it yields one
 * last result (RATE_LIMITED, lapsed credentials) or ends when the subscription does, and `return()`
 * (the client's `complete`, the socket closing) takes it out of the group.
 */
export class GroupMember implements AsyncIterableIterator<ExecutionResult> {
  /** No more events are written for it. */
  done = false;
  private finished = false;
  private final?: ExecutionResult;
  private failure?: { error: unknown };
  private pending?: {
    resolve: (result: IteratorResult<ExecutionResult, undefined>) => void;
    reject: (err: unknown) => void;
  };
  /** The frame up to the payload: `{"id":<id>,"type":"next","payload":` (graphql-ws's own order). */
  private readonly prefix: string;

  constructor(
    readonly socket: WebSocket,
    /** The socket as SocketLimitsService knows it (its graphql-ws Context). */
    readonly ref: SocketRef,
    readonly id: string,
    private readonly leave: (member: GroupMember) => void,
  ) {
    this.prefix = `{"id":${JSON.stringify(id)},"type":"next","payload":`;
  }

  /** Writes an event (`payload`: its JSON text) to the socket; false when it was not written. */
  send(payload: string): boolean {
    if (this.done) {
      return false;
    }
    const ws = this.socket;
    if (ws.readyState !== ws.OPEN) {
      return false;
    }
    if (ws.bufferedAmount > WS_SEND_BUFFER_LIMIT) {
      ws.close(CLOSE_TOO_SLOW, 'Too slow: events waiting to be sent past the limit');
      this.end();
      return false;
    }
    ws.send(this.prefix + payload + '}', SEND_OPTIONS);
    return true;
  }

  /** Ends the subscription, after `result` when given (sent by graphql-ws as a `next`). */
  end(result?: ExecutionResult): void {
    if (this.done) {
      return;
    }
    this.done = true;
    this.leave(this);
    if (result) {
      this.final = result;
    }
    this.settle();
  }

  /** Ends the subscription with an error (graphql-ws sends it as `error`). */
  fail(error: unknown): void {
    if (this.done) {
      return;
    }
    this.done = true;
    this.leave(this);
    this.failure = { error };
    this.settle();
  }

  private settle(): void {
    const pending = this.pending;
    if (pending) {
      this.pending = undefined;
      void this.next().then(pending.resolve, pending.reject);
    }
  }

  next(): Promise<IteratorResult<ExecutionResult, undefined>> {
    if (this.final) {
      const value = this.final;
      this.final = undefined;
      this.finished = true;
      return Promise.resolve({ value, done: false });
    }
    if (this.failure) {
      const { error } = this.failure;
      this.failure = undefined;
      this.finished = true;
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    if (this.finished || this.done) {
      this.finished = true;
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => (this.pending = { resolve, reject }));
  }

  return(): Promise<IteratorResult<ExecutionResult, undefined>> {
    this.end();
    this.final = undefined;
    this.finished = true;
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(err: unknown): Promise<IteratorResult<ExecutionResult, undefined>> {
    this.end();
    this.finished = true;
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<ExecutionResult> {
    return this;
  }
}

/**
 * The subscribers of one live source (a room's messages, a user's changes) that share the document,
 * the operation, the variables and the credential (one SocketCaller): one listener on the source for
 * all of them, and per event, in the source's order: the credential's current rights checked once,
 * each member charged (batched per identity), the selection executed and serialized once, and the
 * same bytes written to every member's socket with only the operation id differing. No promise,
 * iterator or callback per socket and event.
 */
export class SubscriptionGroup {
  private readonly members = new Set<GroupMember>();
  /** The events being delivered, one after the other (their order is the source's). */
  private chain: Promise<void> = Promise.resolve();
  private readonly detach: () => void;

  constructor(
    source: LiveSource,
    /** The first member's execution arguments: its context is the group's (the same rights). */
    private readonly args: ExecutionArgs,
    private readonly cost: number,
    private readonly hooks: GroupHooks,
    private readonly onEmpty: () => void,
  ) {
    this.detach = source.listen(
      (event) => this.onEvent(event),
      () => this.members.size,
    );
  }

  get size(): number {
    return this.members.size;
  }

  join(socket: WebSocket, ref: SocketRef, id: string): GroupMember {
    const member = new GroupMember(socket, ref, id, (m) => this.leave(m));
    this.members.add(member);
    return member;
  }

  private leave(member: GroupMember): void {
    if (this.members.delete(member) && this.members.size === 0) {
      this.detach();
      this.onEmpty();
    }
  }

  private onEvent(payload: unknown): void {
    if (this.members.size === 0) {
      return;
    }
    // those subscribed when the event was published receive it (a later joiner starts after it)
    const members = [...this.members];
    this.chain = this.chain
      .then(() => this.deliver(payload, members))
      .catch((err: unknown) => members.forEach((m) => m.fail(err)));
  }

  private async deliver(payload: unknown, members: GroupMember[]): Promise<void> {
    const context = this.args.contextValue as GqlContext;
    if (context.refreshCaller) {
      // the credential's current rights, once per event for the whole group; once lapsed, its
      // sockets are closed (4403) and nothing more is delivered (current-rights.ts)
      const caller = await context.refreshCaller();
      if (!caller) {
        members.forEach((m) => m.end({ errors: [this.hooks.lapsed()] }));
        return;
      }
      context.caller = caller;
    }
    let live = members.filter((m) => !m.done);
    if (this.cost > 0 && live.length > 0) {
      const refusals = await this.hooks.charge(
        live.map((m) => m.ref),
        this.cost,
      );
      live = live.filter((m, i) => {
        const refused = refusals[i];
        if (refused) {
          m.end({ errors: [refused] });
          return false;
        }
        return true;
      });
    }
    if (live.length === 0) {
      return;
    }
    const result = await execute({ ...this.args, rootValue: payload });
    const bytes = this.hooks.serialize(result);
    const withErrors = (result.errors?.length ?? 0) > 0;
    for (const member of live) {
      if (member.send(bytes) && withErrors) {
        this.hooks.sentErrors(member, result);
      }
    }
  }
}
