/**
 * Restores commit order per room on the receiving side of the fan-out, and fills the gaps of the
 * live stream from the database.
 *
 * Every message carries `seq`, its room's sequence number, taken under the room's row lock inside
 * the sending transaction: seq order is commit order, a room's first message is seq 1, and the seqs
 * of a room have no holes. Publishing happens after commit, so two messages committed back to back
 * (possibly on two instances) may reach the bus in the other order, and a message whose publish
 * failed (Redis away) never reaches it. The sequencer delivers in seq order: an event ahead of a gap
 * waits for the missing ones, at most `gapWaitMs` IN TOTAL from its own arrival however many gaps lie
 * before it; when the wait ends, the missing messages are read from the database (`fill`, pages of at
 * most 100 rows) and delivered in order before it. A gap of more than `maxFill` messages, or one the
 * read cannot fill, is not read: `resync` tells the room's subscribers (RESYNC_REQUIRED) and delivery
 * goes on after it. An event that turns up after its place was passed (late, or a duplicate) was
 * delivered by the fill already, and is dropped as `late`.
 *
 * `catchUp(roomId, lastSeq)` fills a room's tail at once (the messages lost at the end of an outage,
 * which no later event reveals): EventsService calls it with every room's last seq when the bus
 * reconnects.
 *
 * Where a room starts: rooms that existed when this instance booted are seeded with their `last_seq`
 * (EventsService reads it before subscribing); any other room was created after boot and starts at 1.
 * State is a few numbers per room that has had traffic.
 */
export interface Sequenced {
  roomId: string;
  seq: number;
}

interface Pending<T> {
  event: T;
  /** When it arrived (ms, monotonic): it waits at most gapWaitMs from then. */
  at: number;
}

interface RoomState<T> {
  next: number;
  pending?: Map<number, Pending<T>>;
  timer?: NodeJS.Timeout;
  /** A fill is reading the database: nothing is delivered until it is done. */
  filling?: boolean;
}

/**
 * What became of events the live stream did not bring in order: `filled` were read from the
 * database and delivered; `resync` were not (too many, or the read failed): the room's subscribers
 * were told RESYNC_REQUIRED; `gap_skipped` were skipped without a word (only with no `fill`, i.e. a
 * sequencer built without a database); `late` arrived after their place was passed (delivered already
 * by a fill, or a duplicate).
 */
export type SequencerOutcome = 'filled' | 'resync' | 'gap_skipped' | 'late';

export interface GapFill<T> {
  /** The stored messages of the room from `fromSeq` to `toSeq` (inclusive), in order. */
  fill: (roomId: string, fromSeq: number, toSeq: number) => Promise<T[]>;
  /** Tells the room's subscribers that messages `fromSeq`..`toSeq` will not reach them live. */
  resync: (roomId: string, fromSeq: number, toSeq: number) => void;
  /** The largest gap read from the database; larger -> resync. */
  maxFill: number;
}

const now = () => performance.now();

export class RoomSequencer<T extends Sequenced> {
  private readonly rooms = new Map<string, RoomState<T>>();
  private closed = false;

  constructor(
    private readonly deliver: (event: T) => void,
    private readonly gapWaitMs = 1_000,
    private readonly outcome: (what: SequencerOutcome, count: number) => void = () => undefined,
    private readonly gaps?: GapFill<T>,
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
      this.outcome('late', 1); // its place was passed (a fill delivered it), or a duplicate
      return;
    }
    if (event.seq === room.next && !room.pending?.size && !room.filling) {
      room.next += 1; // the common case: in order, nothing waiting
      this.deliver(event);
      return;
    }
    (room.pending ??= new Map()).set(event.seq, { event, at: now() });
    if (!room.filling) {
      this.drain(room);
    }
    if (room.pending?.size && !room.timer && !room.filling) {
      this.armTimer(event.roomId, room);
    }
  }

  /**
   * The room's last committed seq is `lastSeq`: what this instance has not delivered up to it was
   * lost on the way (the end of an outage) and is filled now, without waiting.
   */
  catchUp(roomId: string, lastSeq: number): void {
    let room = this.rooms.get(roomId);
    if (!room) {
      room = { next: 1 }; // created after boot, nothing delivered here yet
      this.rooms.set(roomId, room);
    }
    if (room.filling || lastSeq < room.next || !this.gaps) {
      return;
    }
    clearTimeout(room.timer);
    room.timer = undefined;
    this.fillUpTo(roomId, room, lastSeq);
  }

  /** Rooms with state (for tests and metrics). */
  get size(): number {
    return this.rooms.size;
  }

  /** Rooms tracked and the next seq each expects. */
  nextSeqs(): [string, number][] {
    return [...this.rooms].map(([id, room]) => [id, room.next]);
  }

  close(): void {
    this.closed = true;
    for (const room of this.rooms.values()) {
      clearTimeout(room.timer);
    }
    this.rooms.clear();
  }

  private drain(room: RoomState<T>): void {
    const pending = room.pending;
    if (!pending) {
      return;
    }
    for (let held = pending.get(room.next); held; held = pending.get(room.next)) {
      pending.delete(room.next);
      room.next += 1;
      this.deliver(held.event);
    }
    if (pending.size === 0) {
      room.pending = undefined;
      clearTimeout(room.timer);
      room.timer = undefined;
    }
  }

  /** The timer of the room's oldest waiting event: it fires when that event has waited gapWaitMs. */
  private armTimer(roomId: string, room: RoomState<T>): void {
    let oldest = Infinity;
    for (const held of room.pending?.values() ?? []) {
      oldest = Math.min(oldest, held.at);
    }
    const delay = Math.max(0, oldest + this.gapWaitMs - now());
    room.timer = setTimeout(() => {
      room.timer = undefined;
      if (!room.pending?.size || room.filling) {
        return;
      }
      // every event whose wait is over: the gaps before the last of them are filled together
      const t = now();
      let upTo = 0;
      for (const [seq, held] of room.pending) {
        if (held.at + this.gapWaitMs <= t + 1) {
          upTo = Math.max(upTo, seq);
        }
      }
      if (upTo === 0) {
        this.armTimer(roomId, room);
        return;
      }
      this.fillUpTo(roomId, room, upTo - 1);
    }, delay);
    room.timer.unref();
  }

  /** Delivers the room up to `toSeq`: what is pending, and the rest from the database. */
  private fillUpTo(roomId: string, room: RoomState<T>, toSeq: number): void {
    const fromSeq = room.next;
    const held = room.pending;
    let missing = 0;
    for (let seq = fromSeq; seq <= toSeq; seq++) {
      if (!held?.has(seq)) {
        missing += 1;
      }
    }
    const done = (stored: Map<number, T> | undefined) => {
      room.filling = false;
      if (this.closed) {
        return;
      }
      let unfilled = 0;
      let filled = 0;
      let resyncSent = false;
      for (let seq = fromSeq; seq <= toSeq; seq++) {
        const pending = room.pending?.get(seq);
        room.pending?.delete(seq);
        const event = pending?.event ?? stored?.get(seq);
        if (event) {
          if (!pending) {
            filled += 1;
          }
          this.deliver(event);
        } else {
          if (!resyncSent && this.gaps) {
            resyncSent = true;
            this.gaps.resync(roomId, seq, toSeq);
          }
          unfilled += 1;
        }
      }
      room.next = Math.max(room.next, toSeq + 1);
      if (filled) {
        this.outcome('filled', filled);
      }
      if (unfilled) {
        this.outcome(this.gaps ? 'resync' : 'gap_skipped', unfilled);
      }
      this.drain(room);
      if (room.pending?.size && !room.timer) {
        this.armTimer(roomId, room);
      }
    };
    if (!this.gaps || missing === 0 || missing > this.gaps.maxFill) {
      done(undefined);
      return;
    }
    room.filling = true;
    clearTimeout(room.timer);
    room.timer = undefined;
    this.gaps.fill(roomId, fromSeq, toSeq).then(
      (events) => done(new Map(events.map((e) => [e.seq, e]))),
      () => done(undefined),
    );
  }
}
