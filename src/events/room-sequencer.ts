/**
 * Restores commit order per room on the receiving side of the fan-out.
 *
 * Every message carries `seq`, its room's sequence number, taken under the room's row lock inside
 * the sending transaction: seq order is commit order, and a room's first message is seq 1.
 * Publishing happens after commit, so two messages committed back to back (possibly on two
 * instances) may reach the bus in the other order. The sequencer delivers in seq order: an event
 * ahead of a gap waits (at most `gapWaitMs`) for the missing one; when the wait ends the gap is
 * skipped (that event was lost: its publisher failed or crashed after commit), and anything older
 * that turns up later is dropped. Delivery is therefore at most once and never out of order.
 *
 * Where a room starts: rooms that existed when this instance booted are seeded with their `last_seq`
 * (EventsService reads it before subscribing); any other room was created after boot and starts at 1.
 * State is a few numbers per room that has had traffic.
 */
export interface Sequenced {
  roomId: string;
  seq: number;
}

interface RoomState {
  next: number;
  pending?: Map<number, Sequenced>;
  timer?: NodeJS.Timeout;
}

/**
 * Why the sequencer did not deliver: `gap_skipped` counts the missing events it gave up waiting
 * for; `stale` an event that came after its place was passed (late, or a duplicate).
 */
export type SequencerDrop = 'gap_skipped' | 'stale';

export class RoomSequencer<T extends Sequenced> {
  private readonly rooms = new Map<string, RoomState>();

  constructor(
    private readonly deliver: (event: T) => void,
    private readonly gapWaitMs = 1_000,
    private readonly dropped: (reason: SequencerDrop, count: number) => void = () => undefined,
  ) {}

  /** The room's last committed seq when tracking starts (its next event is lastSeq + 1). */
  seed(roomId: string, lastSeq: number): void {
    if (!this.rooms.has(roomId)) {
      this.rooms.set(roomId, { next: lastSeq + 1 });
    }
  }

  push(event: T): void {
    let room = this.rooms.get(event.roomId);
    if (!room) {
      room = { next: 1 };
      this.rooms.set(event.roomId, room);
    }
    if (event.seq < room.next || room.pending?.has(event.seq)) {
      this.dropped('stale', 1); // late (its gap was already skipped) or a duplicate
      return;
    }
    if (event.seq === room.next && !room.pending?.size) {
      room.next += 1; // the common case: in order, nothing waiting
      this.deliver(event);
      return;
    }
    (room.pending ??= new Map()).set(event.seq, event);
    this.drain(room);
    if (room.pending?.size && !room.timer) {
      this.armTimer(room);
    }
  }

  /** Rooms with state (for tests and metrics). */
  get size(): number {
    return this.rooms.size;
  }

  close(): void {
    for (const room of this.rooms.values()) {
      clearTimeout(room.timer);
    }
    this.rooms.clear();
  }

  private drain(room: RoomState): void {
    const pending = room.pending;
    if (!pending) {
      return;
    }
    for (let event = pending.get(room.next); event; event = pending.get(room.next)) {
      pending.delete(room.next);
      room.next += 1;
      this.deliver(event as T);
    }
    if (pending.size === 0) {
      room.pending = undefined;
      clearTimeout(room.timer);
      room.timer = undefined;
    }
  }

  private armTimer(room: RoomState): void {
    room.timer = setTimeout(() => {
      room.timer = undefined;
      if (!room.pending?.size) {
        return;
      }
      const first = Math.min(...room.pending.keys());
      this.dropped('gap_skipped', first - room.next);
      room.next = first;
      this.drain(room);
      if (room.pending?.size) {
        this.armTimer(room);
      }
    }, this.gapWaitMs);
    room.timer.unref();
  }
}
