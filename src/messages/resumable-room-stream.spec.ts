import { describe, expect, it } from 'vitest';
import type { Message, MessageEvent } from './message.js';
import {
  FELL_BEHIND,
  MAX_REPLAY,
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
function room(stored: number) {
  const listeners = new Set<(m: MessageEvent) => void>();
  let onLoad: () => void = () => undefined;
  return {
    listeners,
    live: (seq: number) => listeners.forEach((l) => l(msg(seq))),
    /** Runs during the read, after the listener was attached (a send landing mid-read). */
    duringLoad(fn: () => void) {
      onLoad = fn;
    },
    sources: {
      listen: (l: (m: MessageEvent) => void) => {
        listeners.add(l);
        return () => listeners.delete(l);
      },
      load: async (fromSeq: number, limit: number) => {
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
    seqs.push(r.done ? -1 : r.value === FELL_BEHIND ? 0 : r.value.seq);
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

  it('attaches the listener before reading: a message committed after the read is not lost', async () => {
    const r = room(3);
    let attachedAtRead = 0;
    r.duringLoad(() => (attachedAtRead = r.listeners.size));
    const stream = await resumableRoomStream(r.sources, 3);
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
});
