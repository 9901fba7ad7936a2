// The benchmark's load generator (bench/run.mjs). Two modes over keep-alive connections, one request
// in flight per connection:
// - closed loop (`rate: Infinity`): each connection sends its next request as soon as the answer to
//   the last one is in: the saturation load of every request scenario when the runner is pinned;
// - paced (`rate`: requests per second): requests at an even rate, for the "same req/s" comparison.
//   autocannon's own `overallRate` is a per-second quota (each second's requests go out in one burst,
//   then the connections wait), so a fast server still takes them several per wake-up.
//
// The loop polls with setImmediate, so the load generator never sleeps: on a loopback benchmark a
// sleeping client is woken by the server's write, and that wake-up is charged to the server's CPU
// time (more per request the slower the server runs). Polling keeps that cost off both servers.
import { connect } from 'node:net';

/**
 * Sends `rate` requests per second (Infinity: as fast as answers come back) for `duration` seconds
 * over `connections` sockets, one request in flight per socket (a due request waits for a free
 * socket). Answers the counts and latencies in autocannon's shape (the fields bench/run.mjs reads).
 * `body`: a string, sent with its length.
 */
export async function pacedLoad({
  url,
  method = 'GET',
  headers = {},
  body,
  rate,
  duration,
  connections,
}) {
  const target = new URL(url);
  const content = body === undefined ? undefined : Buffer.from(body);
  const head = [
    `${method} ${target.pathname}${target.search} HTTP/1.1`,
    `host: ${target.host}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ...(content ? [`content-length: ${content.length}`] : []),
  ];
  const request = Buffer.concat([
    Buffer.from(`${head.join('\r\n')}\r\n\r\n`),
    ...(content ? [content] : []),
  ]);
  const sockets = await Promise.all(
    Array.from({ length: connections }, () => open(target.hostname, Number(target.port))),
  );
  const idle = [...sockets];
  const latencies = [];
  const statusCodes = {};
  let sent = 0;
  let answered = 0;
  let errors = 0;

  for (const socket of sockets) {
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) {
          return;
        }
        const headText = buffered.subarray(0, end).toString('latin1');
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(headText)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) {
          return;
        }
        const status = headText.slice(9, 12);
        statusCodes[status] = (statusCodes[status] ?? 0) + 1;
        latencies.push(performance.now() - socket.startedAt);
        answered += 1;
        buffered = buffered.subarray(end + 4 + length);
        idle.push(socket);
      }
    });
    socket.on('error', () => {
      errors += 1;
    });
  }

  const started = performance.now();
  const stopAt = started + duration * 1000;
  await new Promise((resolve) => {
    const tick = () => {
      const now = performance.now();
      if (now >= stopAt) {
        resolve();
        return;
      }
      const due =
        rate === Infinity ? idle.length : Math.floor(((now - started) * rate) / 1000) - sent;
      for (let i = 0; i < due && idle.length > 0; i++) {
        const socket = idle.pop();
        socket.startedAt = performance.now();
        socket.write(request);
        sent += 1;
      }
      setImmediate(tick);
    };
    tick();
  });
  // the answers still on their way
  const drainUntil = performance.now() + 2000;
  while (answered + errors < sent && performance.now() < drainUntil) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  for (const socket of sockets) {
    socket.destroy();
  }
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    requests: { total: answered, average: answered / duration },
    latency: { p50: at(0.5), p99: at(0.99) },
    non2xx: Object.entries(statusCodes)
      .filter(([status]) => !status.startsWith('2'))
      .reduce((n, [, count]) => n + count, 0),
    errors,
    timeouts: sent - answered - errors,
    statusCodeStats: statusCodes,
  };
}

function open(host, port) {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, noDelay: true }, () => resolve(socket));
    socket.once('error', reject);
  });
}
