import { Injectable } from '@nestjs/common';

/** A delivery attempt to run: the delivery, the attempts it has had, and when. */
export interface ScheduledAttempt {
  id: string;
  attempts: number;
  /** Milliseconds from now. */
  delayMs: number;
  /** The delivery's endpoint (its share of the slots is checked before the row is claimed). */
  endpointId?: string;
}

/**
 * How services hand attempts to the delivery engine without depending on it: the engine registers
 * itself (a BullMQ queue, or the in-process worker's wake-up). The database row stays the truth;
 * this only makes an attempt start sooner than the engine's next sweep would.
 */
@Injectable()
export class WebhookScheduler {
  private sink: ((attempts: ScheduledAttempt[]) => void) | undefined;

  register(sink: (attempts: ScheduledAttempt[]) => void): void {
    this.sink = sink;
  }

  schedule(attempts: ScheduledAttempt[]): void {
    if (attempts.length > 0) {
      this.sink?.(attempts);
    }
  }
}
