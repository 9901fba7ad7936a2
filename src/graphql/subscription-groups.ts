import { execute, type ExecutionArgs, type ExecutionResult, type GraphQLError } from 'graphql';
import type { WebSocket } from 'ws';
import type { LiveSource } from '../events/live-source.js';
import type { SocketRef } from '../rate-limit/socket-limits.service.js';
import type { GqlContext } from './context.js';

/**
 * "Try Again Later": the close code of a slow consumer, a socket with more than WS_SEND_BUFFER_BYTES
 * waiting to be sent (a client that stopped reading must not grow the server's memory without bound).
 * graphql-ws clients reconnect on it; resubscribing with the last `cursor` as `after` replays what
 * it missed.
 */
export const CLOSE_TOO_SLOW = 1013;

/** The ws send options of an event frame: text, never compressed, no per-send callback. */
const SEND_OPTIONS = { binary: false, compress: false, fin: true } as const;

/** What a group needs from the WebSocket server (graphql-ws.server.ts). */
export interface GroupHooks {
  /** `cost` points per socket for one event: each socket's refusal by index (see chargeEvents). */
  charge(sockets: readonly SocketRef[], cost: number): Promise<(GraphQLError | undefined)[]>;
  /** The JSON text of the `payload` sent for `result` (errors formatted, size capped). */
  serialize(result: ExecutionResult): string;
  /** Unsent bytes past which a socket is closed as a slow consumer (WS_SEND_BUFFER_BYTES). */
  readonly sendBufferLimit: number;
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
    private readonly sendBufferLimit: number,
    /** The group's events up to this one were received before it joined (it gets the later ones). */
    readonly since: number,
    /** The socket's TCP stream, corked while a batch of events is written. */
    readonly transport?: Corkable,
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
    if (ws.bufferedAmount > this.sendBufferLimit) {
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
 *
 * The rights check, the charges and the execution of an event start when it arrives, concurrently
 * with the events before it (a backlog does not wait for one database or Redis round trip per event);
 * the outcomes are applied strictly in order. Events whose outcomes are ready together (a backlog) are
 * written to each socket corked, so they leave in one system call per socket instead of one per event:
 * a server that falls behind spends less per event and catches up.
 */
export class SubscriptionGroup {
  private readonly members = new Set<GroupMember>();
  /** Events received, in order, whose outcome is not applied yet. */
  private readonly queue: Pending[] = [];
  /** Events received so far: a member gets those received after it joined. */
  private received = 0;
  private drainScheduled = false;
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

  /** A member for operation `id` on `socket`; `transport` is the socket's TCP stream (corked for batches). */
  join(socket: WebSocket, ref: SocketRef, id: string, transport?: Corkable): GroupMember {
    const member = new GroupMember(
      socket,
      ref,
      id,
      (m) => this.leave(m),
      this.hooks.sendBufferLimit,
      this.received,
      transport,
    );
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
    const entry: Pending = { seq: ++this.received };
    this.queue.push(entry);
    this.prepare(payload, entry.seq).then(
      (outcome) => {
        entry.outcome = outcome;
        this.scheduleDrain();
      },
      (error: unknown) => {
        entry.failure = { error };
        this.scheduleDrain();
      },
    );
  }

  /** The members that receive event `seq` (subscribed before it arrived, not ended). */
  private *recipients(seq: number): Generator<GroupMember> {
    for (const member of this.members) {
      if (member.since < seq && !member.done) {
        yield member;
      }
    }
  }

  private async prepare(payload: unknown, seq: number): Promise<Outcome> {
    const context = this.args.contextValue as GqlContext;
    if (context.refreshCaller) {
      // the credential's current rights, once per event for the whole group (and shared by the
      // events that arrive while a check runs); once lapsed, its sockets are closed (4403) and
      // nothing more is delivered (current-rights.ts)
      const caller = await context.refreshCaller();
      if (!caller) {
        return { lapsed: true };
      }
      context.caller = caller;
    }
    let refused: Map<GroupMember, GraphQLError> | undefined;
    if (this.cost > 0) {
      const charged = [...this.recipients(seq)];
      const refusals =
        charged.length > 0
          ? await this.hooks.charge(
              charged.map((m) => m.ref),
              this.cost,
            )
          : [];
      charged.forEach((m, i) => {
        const refusal = refusals[i];
        if (refusal) {
          (refused ??= new Map()).set(m, refusal);
        }
      });
      if (charged.length > 0 && refused?.size === charged.length) {
        return { lapsed: false, refused };
      }
    }
    const result = await execute({ ...this.args, rootValue: payload });
    return { lapsed: false, refused, result, bytes: this.hooks.serialize(result) };
  }

  private scheduleDrain(): void {
    if (!this.drainScheduled) {
      this.drainScheduled = true;
      // after this turn's other outcomes are in: those ready together leave together
      setImmediate(() => this.drain());
    }
  }

  /** Applies the outcomes ready at the head of the queue, in order. */
  private drain(): void {
    this.drainScheduled = false;
    let ready = 0;
    while (ready < this.queue.length && (this.queue[ready].outcome || this.queue[ready].failure)) {
      ready++;
    }
    if (ready === 0) {
      return;
    }
    const batch = this.queue.splice(0, ready);
    const corked = batch.length > 1 ? this.cork(batch[0].seq) : [];
    try {
      for (const entry of batch) {
        if (entry.failure) {
          const { error } = entry.failure;
          [...this.recipients(entry.seq)].forEach((m) => m.fail(error));
        } else if (entry.outcome) {
          this.apply(entry.outcome, entry.seq);
        }
      }
    } finally {
      corked.forEach((transport) => transport.uncork());
    }
  }

  /** Corks the TCP stream of every recipient of the events from `seq` on (each once). */
  private cork(seq: number): Corkable[] {
    const transports = new Set<Corkable>();
    for (const member of this.recipients(seq)) {
      if (member.transport) {
        transports.add(member.transport);
      }
    }
    transports.forEach((transport) => transport.cork());
    return [...transports];
  }

  private apply(outcome: Outcome, seq: number): void {
    const members = [...this.recipients(seq)];
    if (outcome.lapsed) {
      members.forEach((m) => m.end({ errors: [this.hooks.lapsed()] }));
      return;
    }
    const { refused, result, bytes } = outcome;
    const withErrors = (result?.errors?.length ?? 0) > 0;
    for (const member of members) {
      const refusal = refused?.get(member);
      if (refusal) {
        member.end({ errors: [refusal] });
      } else if (bytes !== undefined && member.send(bytes) && withErrors && result) {
        this.hooks.sentErrors(member, result);
      }
    }
  }
}

/** A socket's TCP stream: several frames written between `cork()` and `uncork()` leave together. */
export interface Corkable {
  cork(): void;
  uncork(): void;
}

/** One event waiting to be applied. */
interface Pending {
  seq: number;
  outcome?: Outcome;
  failure?: { error: unknown };
}

/** What one event comes to for a group, applied in order (SubscriptionGroup.apply). */
type Outcome =
  | { lapsed: true }
  | {
      lapsed: false;
      refused?: Map<GroupMember, GraphQLError>;
      result?: ExecutionResult;
      /** The payload's JSON text: absent when every member was refused. */
      bytes?: string;
    };
