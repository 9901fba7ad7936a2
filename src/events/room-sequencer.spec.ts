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
});
