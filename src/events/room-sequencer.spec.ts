import { afterEach, describe, expect, it, vi } from 'vitest';
import { RoomSequencer } from './room-sequencer.js';

interface Ev {
  roomId: string;
  seq: number;
}

describe('RoomSequencer', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  function make(gapWaitMs = 1_000) {
    const out: string[] = [];
    const s = new RoomSequencer<Ev>((e) => out.push(`${e.roomId}#${e.seq}`), gapWaitMs);
    return { s, out };
  }

  it('passes events in order straight through', () => {
    const { s, out } = make();
    [1, 2, 3].forEach((seq) => s.push({ roomId: 'a', seq }));
    expect(out).toEqual(['a#1', 'a#2', 'a#3']);
    s.close();
  });

  it('holds an event that overtook its predecessor until the predecessor arrives', () => {
    const { s, out } = make();
    s.push({ roomId: 'a', seq: 1 });
    s.push({ roomId: 'a', seq: 3 });
    expect(out).toEqual(['a#1']);
    s.push({ roomId: 'a', seq: 2 });
    expect(out).toEqual(['a#1', 'a#2', 'a#3']);
    s.close();
  });

  it('orders each room on its own', () => {
    const { s, out } = make();
    s.seed('b', 6);
    s.push({ roomId: 'a', seq: 1 });
    s.push({ roomId: 'b', seq: 7 });
    s.push({ roomId: 'a', seq: 3 });
    s.push({ roomId: 'b', seq: 8 });
    expect(out).toEqual(['a#1', 'b#7', 'b#8']);
    s.close();
  });

  it('starts an unseeded room at 1, so a second message that overtakes the first waits for it', () => {
    const { s, out } = make();
    s.push({ roomId: 'new', seq: 2 });
    expect(out).toEqual([]);
    s.push({ roomId: 'new', seq: 1 });
    expect(out).toEqual(['new#1', 'new#2']);
    s.close();
  });

  it('starts a seeded room after its last committed seq', () => {
    const { s, out } = make();
    s.seed('old', 41);
    s.push({ roomId: 'old', seq: 41 }); // committed before tracking started: not ours to deliver
    s.push({ roomId: 'old', seq: 42 });
    expect(out).toEqual(['old#42']);
    s.close();
  });

  it('skips a gap that is not filled in time and drops the latecomer', () => {
    vi.useFakeTimers();
    const { s, out } = make(500);
    s.push({ roomId: 'a', seq: 1 });
    s.push({ roomId: 'a', seq: 4 });
    s.push({ roomId: 'a', seq: 3 });
    vi.advanceTimersByTime(499);
    expect(out).toEqual(['a#1']);
    vi.advanceTimersByTime(1);
    expect(out).toEqual(['a#1', 'a#3', 'a#4']);
    s.push({ roomId: 'a', seq: 2 }); // too late: delivering it now would break the order
    s.push({ roomId: 'a', seq: 5 });
    expect(out).toEqual(['a#1', 'a#3', 'a#4', 'a#5']);
    s.close();
  });

  it('drops duplicates', () => {
    const { s, out } = make();
    s.push({ roomId: 'a', seq: 1 });
    s.push({ roomId: 'a', seq: 1 });
    s.push({ roomId: 'a', seq: 3 });
    s.push({ roomId: 'a', seq: 3 });
    s.push({ roomId: 'a', seq: 2 });
    expect(out).toEqual(['a#1', 'a#2', 'a#3']);
    s.close();
  });

  it('waits at most gapWaitMs in total for an event, however many gaps lie before it', () => {
    vi.useFakeTimers();
    const { s, out } = make(1_000);
    s.push({ roomId: 'a', seq: 1 });
    // 2, 4, 6 and 8 never come: four gaps
    [3, 5, 7, 9].forEach((seq) => s.push({ roomId: 'a', seq }));
    vi.advanceTimersByTime(1_000);
    expect(out).toEqual(['a#1', 'a#3', 'a#5', 'a#7', 'a#9']);
    s.close();
  });

  function filling(gapWaitMs = 1_000, maxFill = 1_000) {
    const out: string[] = [];
    const reads: [number, number][] = [];
    const resyncs: [number, number][] = [];
    const outcomes: string[] = [];
    const s = new RoomSequencer<Ev>(
      (e) => out.push(`${e.roomId}#${e.seq}`),
      gapWaitMs,
      (what, count) => outcomes.push(`${what}:${count}`),
      {
        maxFill,
        fill: async (roomId, fromSeq, toSeq) => {
          reads.push([fromSeq, toSeq]);
          return Array.from({ length: toSeq - fromSeq + 1 }, (_, i) => ({
            roomId,
            seq: fromSeq + i,
          }));
        },
        resync: (_roomId, fromSeq, toSeq) => resyncs.push([fromSeq, toSeq]),
      },
    );
    return { s, out, reads, resyncs, outcomes };
  }

  it('fills the gaps from the store in room order before the waiting events, once the wait is over; a latecomer is dropped as late', async () => {
    vi.useFakeTimers();
    const { s, out, reads, outcomes } = filling();
    s.push({ roomId: 'a', seq: 1 });
    s.push({ roomId: 'a', seq: 4 });
    s.push({ roomId: 'a', seq: 7 });
    await vi.advanceTimersByTimeAsync(999);
    expect(out).toEqual(['a#1']);
    await vi.advanceTimersByTimeAsync(1);
    expect(reads).toEqual([[2, 6]]);
    expect(out).toEqual(['a#1', 'a#2', 'a#3', 'a#4', 'a#5', 'a#6', 'a#7']);
    s.push({ roomId: 'a', seq: 2 });
    s.push({ roomId: 'a', seq: 8 });
    expect(out.at(-1)).toBe('a#8');
    expect(outcomes).toEqual(['filled:4', 'late:1']);
    s.close();
  });

  it('does not read a gap larger than maxFill: it sends a resync and goes on', async () => {
    vi.useFakeTimers();
    const { s, out, reads, resyncs, outcomes } = filling(1_000, 10);
    s.push({ roomId: 'a', seq: 1 });
    s.push({ roomId: 'a', seq: 13 });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(reads).toEqual([]);
    expect(resyncs).toEqual([[2, 12]]);
    expect(out).toEqual(['a#1', 'a#13']);
    expect(outcomes).toEqual(['resync:11']);
    s.close();
  });

  it('catchUp fills the tail of a room at once (messages lost at the end of an outage)', async () => {
    const { s, out, reads } = filling();
    s.push({ roomId: 'a', seq: 1 });
    s.catchUp('a', 3);
    await vi.waitFor(() => expect(out).toEqual(['a#1', 'a#2', 'a#3']));
    expect(reads).toEqual([[2, 3]]);
    s.catchUp('a', 3); // nothing missing: no read
    expect(reads).toHaveLength(1);
    s.close();
  });
});
