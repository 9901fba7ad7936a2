import { EventEmitter } from 'node:events';
import { setImmediate as turn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { fairMessages, WS_MESSAGES_PER_TURN, WS_QUEUE_HIGH_WATER } from './ws-fair-queue.js';

/** The part of a ws WebSocket fairMessages uses: events, pause, resume. */
class Socket extends EventEmitter {
  isPaused = false;
  pauses = 0;
  pause() {
    this.isPaused = true;
    this.pauses++;
  }
  resume() {
    this.isPaused = false;
  }
}

describe('fairMessages', () => {
  it('hands a burst of messages over a few per turn of the event loop, in order, pausing the socket while many wait', async () => {
    const socket = new Socket();
    fairMessages(socket as unknown as WebSocket);
    const seen: number[] = [];
    socket.on('message', (n: number) => seen.push(n));
    const N = WS_QUEUE_HIGH_WATER * 3;
    for (let i = 0; i < N; i++) {
      socket.emit('message', i);
    }
    // the first WS_MESSAGES_PER_TURN at once, the rest a turn of the event loop at a time
    expect(seen).toEqual(Array.from({ length: WS_MESSAGES_PER_TURN }, (_, i) => i));
    expect(socket.isPaused).toBe(true);
    await turn();
    expect(seen).toEqual(Array.from({ length: 2 * WS_MESSAGES_PER_TURN }, (_, i) => i));
    while (seen.length < N) {
      await turn();
    }
    expect(seen).toEqual(Array.from({ length: N }, (_, i) => i));
    await turn();
    expect(socket.isPaused).toBe(false);
    expect(socket.pauses).toBe(1);
  });

  it('passes other events through at once and drops what is still queued when the socket closes', async () => {
    const socket = new Socket();
    fairMessages(socket as unknown as WebSocket);
    const seen: unknown[] = [];
    socket.on('message', (n: number) => seen.push(n));
    socket.on('close', (code: number) => seen.push(`close ${code}`));
    for (let i = 0; i < WS_MESSAGES_PER_TURN + 1; i++) {
      socket.emit('message', i);
    }
    socket.emit('close', 1000);
    const first = Array.from({ length: WS_MESSAGES_PER_TURN }, (_, i) => i);
    expect(seen).toEqual([...first, 'close 1000']);
    await turn();
    await turn();
    expect(seen).toEqual([...first, 'close 1000']); // the one queued is dropped
  });
});
