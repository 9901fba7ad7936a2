// Helpers shared by the benchmark scripts that start the built app themselves
// (bench/hostile-graphql.mjs, bench/abuse.mjs).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** POSTs JSON; throws on a status of 300 or more. */
export async function post(url, body, headers = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) {
    throw new Error(`POST ${url} -> ${res.status}: ${text.slice(0, 300)}`);
  }
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** Waits until `url` answers 200, failing when `child` exits first or after 60 s. */
export async function waitReady(child, url) {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`app exited with ${child.exitCode} before it was ready`);
    }
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) {
        return;
      }
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  throw new Error(`app not ready at ${url}`);
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort() {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolvePort(port));
    });
  });
}

/** User + system CPU time of a process so far, in ms (Linux, clock ticks of 10 ms); 0 elsewhere. */
export function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}
