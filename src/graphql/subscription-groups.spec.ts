import { setTimeout as sleep } from 'node:timers/promises';
import { buildSchema, GraphQLError, parse, type ExecutionArgs } from 'graphql';
import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import type { LiveSource } from '../events/live-source.js';
import {
  CLOSE_TOO_SLOW,
  SubscriptionGroup,
  type Corkable,
  type GroupHooks,
} from './subscription-groups.js';

const schema = buildSchema('type Query { x: Int } type Subscription { tick: Int }');

/** The part of a ws WebSocket a group uses: what was sent, and how it was closed. */
class Socket {
  readonly OPEN = 1;
  readyState = 1;
  bufferedAmount = 0;
  sent: string[] = [];
  closedWith?: number;
  send(data: string) {
    this.sent.push(data);
  }
  close(code: number) {
    this.closedWith = code;
    this.readyState = 2;
  }
  ticks(): number[] {
    return this.sent.map(
      (f) => (JSON.parse(f) as { payload: { data: { tick: number } } }).payload.data.tick,
    );
  }
}

class Transport implements Corkable {
  corks = 0;
  uncorks = 0;
  cork() {
    this.corks++;
  }
  uncork() {
    this.uncorks++;
  }
}

function source() {
  let listener: ((event: unknown) => void) | undefined;
  const live: LiveSource = {
    key: 'topic',
    listen: (l) => {
      listener = l;
      return () => (listener = undefined);
    },
  };
  return { live, emit: (event: unknown) => listener?.(event), listening: () => !!listener };
}

function group(
  options: {
    /** How long the rights check of the n-th event takes (ms). */
    checkMs?: (n: number) => number;
    charge?: GroupHooks['charge'];
    cost?: number;
    sendBufferLimit?: number;
  } = {},
) {
  const src = source();
  let checks = 0;
  const args: ExecutionArgs = {
    schema,
    document: parse('subscription { tick }'),
    contextValue: {
      refreshCaller: async () => {
        await sleep(options.checkMs?.(checks++) ?? 0);
        return { userId: 'u' };
      },
    },
  };
  const hooks: GroupHooks = {
    charge: options.charge ?? (async () => []),
    serialize: (result) => JSON.stringify(result),
    sendBufferLimit: options.sendBufferLimit ?? 1024,
    lapsed: () => new GraphQLError('lapsed'),
    sentErrors: () => undefined,
  };
  let emptied = false;
  const g = new SubscriptionGroup(src.live, args, options.cost ?? 0, hooks, () => (emptied = true));
  return { g, src, emptied: () => emptied };
}

const until = async (ok: () => boolean) => {
  for (let i = 0; i < 200 && !ok(); i++) {
    await sleep(5);
  }
  expect(ok()).toBe(true);
};

describe('SubscriptionGroup', () => {
  it('applies events in the order they arrived even when their checks finish in another order', async () => {
    const { g, src } = group({ checkMs: (n) => [30, 10, 0, 20][n] ?? 0 });
    const a = new Socket();
    const b = new Socket();
    g.join(a as unknown as WebSocket, 'a', '1');
    g.join(b as unknown as WebSocket, 'b', '2');
    [1, 2, 3, 4].forEach((tick) => src.emit({ tick }));
    await until(() => a.sent.length === 4 && b.sent.length === 4);
    expect(a.ticks()).toEqual([1, 2, 3, 4]);
    expect(b.ticks()).toEqual([1, 2, 3, 4]);
    // the same bytes, only the operation id differs
    expect(a.sent[0]).toBe(b.sent[0].replace('"id":"2"', '"id":"1"'));
    expect(a.sent[0]).toBe('{"id":"1","type":"next","payload":{"data":{"tick":1}}}');
  });

  it('gives a member only the events that arrived after it joined', async () => {
    const { g, src } = group({ checkMs: () => 10 });
    const early = new Socket();
    const late = new Socket();
    g.join(early as unknown as WebSocket, 'early', '1');
    src.emit({ tick: 1 });
    g.join(late as unknown as WebSocket, 'late', '1');
    src.emit({ tick: 2 });
    await until(() => early.sent.length === 2 && late.sent.length === 1);
    expect(late.ticks()).toEqual([2]);
  });

  it('writes a batch of ready events corked, once per socket', async () => {
    // the first check is slow: the next ones are ready by then, and all leave in one batch
    const { g, src } = group({ checkMs: (n) => (n === 0 ? 30 : 0) });
    const transport = new Transport();
    const a = new Socket();
    g.join(a as unknown as WebSocket, 'a', '1', transport);
    g.join(a as unknown as WebSocket, 'a', '2', transport); // two operations, one socket
    [1, 2, 3].forEach((tick) => src.emit({ tick }));
    await until(() => a.sent.length === 6);
    expect(transport.corks).toBe(1);
    expect(transport.uncorks).toBe(1);
  });

  it('ends exactly the members whose charge is refused, with the refusal as their last result', async () => {
    const refusal = new GraphQLError('budget', { extensions: { code: 'RATE_LIMITED' } });
    const { g, src } = group({
      cost: 2,
      charge: async (sockets) => sockets.map((s) => (s === 'b' ? refusal : undefined)),
    });
    const a = new Socket();
    const b = new Socket();
    g.join(a as unknown as WebSocket, 'a', '1');
    const mb = g.join(b as unknown as WebSocket, 'b', '1');
    const last = mb.next();
    src.emit({ tick: 1 });
    expect(await last).toEqual({ value: { errors: [refusal] }, done: false });
    expect(await mb.next()).toEqual({ value: undefined, done: true });
    expect(a.ticks()).toEqual([1]);
    expect(b.sent).toEqual([]);
    expect(g.size).toBe(1);
  });

  it('closes a socket with more unsent bytes than the limit (1013) and ends its member', async () => {
    const { g, src, emptied } = group({ sendBufferLimit: 100 });
    const slow = new Socket();
    const member = g.join(slow as unknown as WebSocket, 'slow', '1');
    const end = member.next();
    slow.bufferedAmount = 101;
    src.emit({ tick: 1 });
    expect(await end).toEqual({ value: undefined, done: true });
    expect(slow.closedWith).toBe(CLOSE_TOO_SLOW);
    expect(slow.sent).toEqual([]);
    expect(emptied()).toBe(true);
    expect(src.listening()).toBe(false);
  });

  it('leaves the source when its last member returns', async () => {
    const { g, src, emptied } = group();
    const m = g.join(new Socket() as unknown as WebSocket, 's', '1');
    expect(src.listening()).toBe(true);
    await m.return();
    expect(emptied()).toBe(true);
    expect(src.listening()).toBe(false);
  });
});
