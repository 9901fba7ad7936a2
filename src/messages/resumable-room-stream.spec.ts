import { describe, expect, it } from 'vitest';
import { GraphQLError } from 'graphql';
import { QueuedBytes, RefusedEvent, ReplaySlots, type ReplayGate } from '../graphql/ws-replay.js';
import type { Message, MessageEvent } from '../domain/message.js';
import {
  FELL_BEHIND,
  MAX_REPLAY,
  REPLAY_PAGE,
  resumableRoomStream,
  type RoomStreamItem,
} from './resumable-room-stream.js';

const msg = (seq: number): Message => ({
  id: `m${seq}`,
  roomId: 'r',
  authorId: 'u',
  content: `#${seq}`,
  createdAt: '2026-01-01T00:00:00.000Z',
  seq,
  cursor: `c${seq}`,
});

/** A room whose stored messages are 1..stored, and a live listener the test drives. */
function room(initiallyStored: number) {
  const listeners = new Set<(m: MessageEvent) => void>();
  let onLoad: () => void = () => undefined;
  let stored = initiallyStored;
  const loads: { fromSeq: number; limit: number }[] = [];
  return {
    listeners,
    loads,
    /** A message committed (so stored) and delivered live. */
    live: (seq: number) => {
      stored = Math.max(stored, seq);
      listeners.forEach((l) => l(msg(seq)));
    },
    /** Runs during the read, after the listener was attached (a send landing mid-read). */
    duringLoad(fn: () => void) {
      onLoad = fn;
    },
    sources: {
      listen: (l: (m: MessageEvent) => void) => {
        listeners.add(l);
        return () => listeners.delete(l);
      },
      lastSeq: async () => stored,
      load: async (fromSeq: number, limit: number) => {
        loads.push({ fromSeq, limit });
        onLoad();
        const out: Message[] = [];
        for (let s = fromSeq; s <= stored && out.length < limit; s++) {
          out.push(msg(s));
        }
        return out;
      },
    },
  };
}

async function take(it: AsyncIterator<RoomStreamItem>, n: number): Promise<number[]> {
  const seqs: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await it.next();
    seqs.push(
      r.done
        ? -1
        : r.value === FELL_BEHIND
          ? 0
          : r.value instanceof RefusedEvent
            ? -2
            : r.value.seq,
    );
  }
  return seqs;
}

describe('resumableRoomStream', () => {
  it('replays after the cursor, then live, dropping live messages the replay already gave', async () => {
    const r = room(5);
    // 4 and 5 are stored and also reach the listener during the read (delivered late), 6 is new
    r.duringLoad(() => [4, 5, 6].forEach((s) => r.live(s)));
    const stream = await resumableRoomStream(r.sources, 2);
    r.live(5); // a lagging instance delivers 5 again
    r.live(7);
    expect(await take(stream, 5)).toEqual([3, 4, 5, 6, 7]);
    await stream.return!();
    expect(r.listeners.size).toBe(0);
  });

  it('attaches the listener before reading the last position: a message committed after the read is not lost', async () => {
    const r = room(3);
    let attachedAtRead = 0;
    const lastSeq = r.sources.lastSeq;
    const sources = {
      ...r.sources,
      lastSeq: () => {
        attachedAtRead = r.listeners.size;
        return lastSeq();
      },
    };
    const stream = await resumableRoomStream(sources, 3);
    expect(attachedAtRead).toBe(1);
    r.live(4);
    expect(await take(stream, 1)).toEqual([4]);
    await stream.return!();
  });

  it(`replays exactly ${MAX_REPLAY}; one more is RESYNC_REQUIRED and detaches`, async () => {
    const ok = room(MAX_REPLAY + 1);
    const stream = await resumableRoomStream(ok.sources, 1);
    const seqs = await take(stream, MAX_REPLAY);
    expect(seqs[0]).toBe(2);
    expect(seqs.at(-1)).toBe(MAX_REPLAY + 1);
    await stream.return!();

    const over = room(MAX_REPLAY + 2);
    await expect(resumableRoomStream(over.sources, 1)).rejects.toMatchObject({
      extensions: { code: 'RESYNC_REQUIRED' },
    });
    expect(over.listeners.size).toBe(0);
  });

  it('refuses a position the room has not reached (BAD_USER_INPUT) and detaches', async () => {
    const r = room(3);
    await expect(resumableRoomStream(r.sources, 9)).rejects.toMatchObject({ code: 'bad_request' });
    expect(r.listeners.size).toBe(0);
  });

  it('ends with FELL_BEHIND, and lets the room go, once its reader is more than MAX_REPLAY messages behind', async () => {
    const r = room(1);
    const stream = await resumableRoomStream(r.sources, 1);
    for (let seq = 2; seq <= MAX_REPLAY + 1; seq++) {
      r.live(seq); // nobody reads: MAX_REPLAY messages wait
    }
    expect(r.listeners.size).toBe(1);
    r.live(MAX_REPLAY + 2); // one more than a resume could replay
    expect(r.listeners.size).toBe(0);
    r.live(MAX_REPLAY + 3);
    expect(await take(stream, 2)).toEqual([0, -1]); // FELL_BEHIND, then done
  });

  it('keeps a reader that keeps up, however many messages pass', async () => {
    const r = room(1);
    const stream = await resumableRoomStream(r.sources, 1);
    for (let seq = 2; seq <= 3 * MAX_REPLAY; seq += 100) {
      for (let k = 0; k < 100; k++) {
        r.live(seq + k);
      }
      expect((await take(stream, 100))[99]).toBe(seq + 99);
    }
    expect(r.listeners.size).toBe(1);
    await stream.return?.();
    expect(r.listeners.size).toBe(0);
  });

  it('reads nothing before the consumer pulls, then pages of at most REPLAY_PAGE rows, one page per pull of an empty queue', async () => {
    const r = room(MAX_REPLAY + 1);
    const stream = await resumableRoomStream(r.sources, 1);
    expect(r.loads).toEqual([]);
    expect(await take(stream, 1)).toEqual([2]);
    expect(r.loads).toEqual([{ fromSeq: 2, limit: REPLAY_PAGE }]);
    await take(stream, REPLAY_PAGE - 1);
    expect(r.loads).toHaveLength(1);
    await take(stream, 1);
    expect(r.loads).toEqual([
      { fromSeq: 2, limit: REPLAY_PAGE },
      { fromSeq: 2 + REPLAY_PAGE, limit: REPLAY_PAGE },
    ]);
    await stream.return!();
    expect(r.listeners.size).toBe(0);
  });

  it('charges a page before reading it; when a page does not fit, charges event by event, then ends with the refusal', async () => {
    const r = room(300);
    let budget = 150;
    const charges: number[] = [];
    const gate: ReplayGate = {
      slot: async () => () => undefined,
      charge: async (count) => {
        charges.push(count);
        if (count > budget) {
          return new GraphQLError('budget', { extensions: { code: 'RATE_LIMITED' } });
        }
        budget -= count;
        return undefined;
      },
      queue: new QueuedBytes(1 << 20),
    };
    const stream = await resumableRoomStream({ ...r.sources, gate }, 0);
    const seqs = await take(stream, 152);
    expect(seqs.slice(0, 150)).toEqual(Array.from({ length: 150 }, (_, i) => i + 1));
    expect(seqs.slice(150)).toEqual([-2, -1]); // the refusal, then done
    expect(charges.slice(0, 3)).toEqual([100, 100, 1]);
    expect(r.loads.reduce((n, l) => n + l.limit, 0)).toBe(150); // nothing read that was not charged
    expect(r.listeners.size).toBe(0);
  });

  it('runs at most 2 replays per identity and 32 on the instance; the others wait, and an ended waiter leaves the queue', async () => {
    const slots = new ReplaySlots(2, 3);
    const a = new AbortController();
    const granted: string[] = [];
    const take1 = (who: string, signal = new AbortController().signal) =>
      slots.acquire(who, signal).then((release) => {
        granted.push(who);
        return release;
      });
    const a1 = await take1('a');
    await take1('a');
    const a3 = take1('a', a.signal);
    await take1('b');
    const c1 = take1('c');
    await Promise.resolve();
    expect(granted).toEqual(['a', 'a', 'b']);
    expect(slots.queued).toBe(2);
    a.abort();
    await expect(a3).rejects.toThrow();
    a1();
    await c1;
    expect(granted).toEqual(['a', 'a', 'b', 'c']);
    expect(slots.active).toBe(3);
  });

  it('counts queued live events against the socket and ends with FELL_BEHIND past its limit', async () => {
    const r = room(1);
    const queue = new QueuedBytes(3 * (256 + 2));
    const gate: ReplayGate = {
      slot: async () => () => undefined,
      charge: async () => undefined,
      queue,
    };
    const stream = await resumableRoomStream({ ...r.sources, gate }, 1);
    r.live(2);
    expect(await take(stream, 1)).toEqual([2]); // caught up: live from here on
    const pending = stream.next(); // waits for the next live message
    r.live(3);
    expect((await pending).value).toMatchObject({ seq: 3 });
    [4, 5, 6].forEach((s) => r.live(s)); // nobody reads: 3 queued (258 bytes each)
    expect(queue.bytes).toBe(3 * 258);
    r.live(7);
    expect(queue.bytes).toBe(0);
    expect(await take(stream, 2)).toEqual([0, -1]);
  });
});
