/**
 * Restores commit order per room on the receiving side of the fan-out.
 *
 * Every message carries `seq`, its room's sequence number, taken under the room's row lock inside
 * the sending transaction: seq order is commit order. Publishing happens after commit, so two
 * messages committed back to back (possibly on two instances) may reach Redis in the other order.
 * The sequencer delivers in seq order: an event ahead of a gap waits (at most `gapWaitMs`) for the
 * missing one; when the wait ends the gap is skipped, and anything older that turns up later is
 * dropped. Delivery is therefore at most once and never out of order. The first event seen for a
 * room sets its starting point.
 */
export interface Sequenced {
  roomId: string;
  seq: number;
}

interface RoomState {
  next: number;
  pending: Map<number, Sequenced>;
  timer?: NodeJS.Timeout;
  lastSeen: number;
}

export class RoomSequencer<T extends Sequenced> {
  private readonly rooms = new Map<string, RoomState>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly deliver: (event: T) => void,
    private readonly gapWaitMs = 1_000,
    /** State of a room idle this long is forgotten (its next event starts afresh). */
    private readonly idleMs = 10 * 60_000,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(idleMs, 60_000));
    this.sweeper.unref();
  }

  push(event: T): void {
    let room = this.rooms.get(event.roomId);
    if (!room) {
      room = { next: event.seq, pending: new Map(), lastSeen: Date.now() };
      this.rooms.set(event.roomId, room);
    }
    room.lastSeen = Date.now();
    if (event.seq < room.next || room.pending.has(event.seq)) {
      return; // late (its gap was already skipped) or a duplicate
    }
    room.pending.set(event.seq, event);
    this.drain(room);
    if (room.pending.size > 0 && !room.timer) {
      room.timer = setTimeout(() => this.skipGap(room), this.gapWaitMs);
      room.timer.unref();
    }
  }

  /** Rooms with state (for tests and metrics). */
  get size(): number {
    return this.rooms.size;
  }

  close(): void {
    clearInterval(this.sweeper);
    for (const room of this.rooms.values()) {
      clearTimeout(room.timer);
    }
    this.rooms.clear();
  }

  private drain(room: RoomState): void {
    for (let event = room.pending.get(room.next); event; event = room.pending.get(room.next)) {
      room.pending.delete(room.next);
      room.next += 1;
      this.deliver(event as T);
    }
    if (room.pending.size === 0 && room.timer) {
      clearTimeout(room.timer);
      room.timer = undefined;
    }
  }

  private skipGap(room: RoomState): void {
    room.timer = undefined;
    if (room.pending.size === 0) {
      return;
    }
    room.next = Math.min(...room.pending.keys());
    this.drain(room);
    if (room.pending.size > 0) {
      room.timer = setTimeout(() => this.skipGap(room), this.gapWaitMs);
      room.timer.unref();
    }
  }

  private sweep(): void {
    const cutoff = Date.now() - this.idleMs;
    for (const [id, room] of this.rooms) {
      if (room.lastSeen < cutoff && room.pending.size === 0) {
        this.rooms.delete(id);
      }
    }
  }
}
