// Load benchmark: the built app (dist/main.js) against a bare Fastify baseline, same machine, same run.
// Usage: npm run bench [-- --only <name[,name]>] [--list] [--json <file>] [--no-baseline]
//                      [--compare <another checkout, built>]   (its app scenarios interleaved with ours)
//        npm run bench -- --scale [--sizes 1000,100000,1000000]   (list latency by table size: bench/scale.mjs)
//        npm run bench -- --abuse   (a good client's latency while abusive clients run: bench/abuse.mjs)
//        npm run bench -- --instructions [--compare <checkout>] [--tracing]   (instructions per request: bench/instructions.mjs)
//        npm run bench -- --trusted-documents [--instructions]   (documentId vs text: bench/trusted-documents.mjs)
//        npm run bench -- --webhooks   (10,000 events to 10 endpoints, one failing half the time: bench/webhooks.mjs)
//        npm run bench -- --replay-flood   (USERs replaying messageAdded(after:) at the default caps: bench/replay-flood.mjs)
// Environment:
//   BENCH_DURATION      seconds per scenario (default 10)
//   BENCH_WARMUP        seconds of discarded warm-up load per scenario (default 2; 0 = none)
//   BENCH_CONNECTIONS   concurrent connections (default 10)
//   BENCH_PIPELINING    requests in flight per connection (default 1; above 1, autocannon drives)
//   BENCH_CLIENT        load generator of the request scenarios: `polling` (default when the runner
//                       pins the servers and itself to different CPUs: a closed loop that never
//                       sleeps, bench/paced-load.mjs) or `autocannon` (the default otherwise; a sleeping
//                       client's wake-ups are charged to the server: bench/README.md)
//   BENCH_ROUNDS        interleaved rounds of the load scenarios; rows report the median (default 1)
//   BENCH_NODE_ENV      NODE_ENV of the app under test (default production)
//   BENCH_SERVER_CPU, BENCH_CLIENT_CPU   CPUs for servers / load generator when taskset exists
//                       (default: the first two CPUs this process may use)
//   BENCH_NO_PIN=1      do not pin anything
//   BENCH_APP_NODE_ARGS extra node flags for the app, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
//   BENCH_EQUAL_LOAD=1  also measure each app scenario and the bare handler at the same traffic
//                       (80% of the app's req/s, evenly paced: bench/paced-load.mjs); the column
//                       `CPU vs bare, same req/s` (bench/README.md)
//   BENCH_FANOUT_SUBSCRIBERS, BENCH_FANOUT_RATE   fan-out scenario: subscribers (200), messages/s (50)
// The `peer ...` scenarios run the conventional NestJS stack (bench/peer-server.mjs) over the app's
// SQLite file; each round also times a fixed reference computation on the servers' CPU
// (bench/reference.mjs), printed next to the bare handler's µs so a loaded machine shows.
// See bench/README.md for how to read the table.
import autocannon from 'autocannon';
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runFanout } from './fanout.mjs';
import { pacedLoad } from './paced-load.mjs';
import { seedUsersWithPosts } from './plumbing.mjs';
import { oauthAccessToken } from './oauth-token.mjs';
import { referenceTiming } from './reference.mjs';
import { startOtlpSink } from './tracing.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN_EMAIL = 'bench-admin@example.com';
const ADMIN_PASSWORD = 'bench-password-123';
const READY_TIMEOUT_MS = 60_000;

const { values: args } = parseArgs({
  options: {
    only: { type: 'string', multiple: true },
    list: { type: 'boolean', default: false },
    json: { type: 'string' },
    'no-baseline': { type: 'boolean', default: false },
    compare: { type: 'string' },
    scale: { type: 'boolean', default: false },
    abuse: { type: 'boolean', default: false },
    webhooks: { type: 'boolean', default: false },
    'replay-flood': { type: 'boolean', default: false },
    instructions: { type: 'boolean', default: false },
    'trusted-documents': { type: 'boolean', default: false },
    tracing: { type: 'boolean', default: false },
    sizes: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

// `--abuse`: slow clients, oversized headers, WebSocket and GraphQL floods vs a good client (bench/abuse.mjs)
if (args.abuse) {
  const { runAbuse } = await import('./abuse.mjs');
  await runAbuse();
  process.exit(0);
}

// `--trusted-documents [--instructions]`: a GraphQL request by documentId against the same by text,
// in CPU time or in instructions (bench/trusted-documents.mjs)
if (args['trusted-documents']) {
  const { runTrustedDocuments } = await import('./trusted-documents.mjs');
  await runTrustedDocuments({ root: ROOT, instructions: args.instructions });
  process.exit(0);
}

// `--instructions`: instructions per request under valgrind's callgrind (bench/instructions.mjs)
if (args.instructions) {
  const { runInstructions } = await import('./instructions.mjs');
  await runInstructions({ root: ROOT, compare: args.compare, tracing: args.tracing });
  process.exit(0);
}

// `--webhooks`: webhook delivery throughput and latency, and the API's latency meanwhile (bench/webhooks.mjs)
if (args.webhooks) {
  const { runWebhooks } = await import('./webhooks.mjs');
  await runWebhooks();
  process.exit(0);
}

// `--replay-flood`: RSS and another user's latency while USERs replay messageAdded(after:) (bench/replay-flood.mjs)
if (args['replay-flood']) {
  const { runReplayFlood } = await import('./replay-flood.mjs');
  process.exit((await runReplayFlood()) ? 0 : 1);
}

// `--scale`: list latency at 1k/100k/1M rows instead of the load scenarios (bench/scale.mjs)
if (args.scale) {
  const { runScale } = await import('./scale.mjs');
  await runScale({ sizes: args.sizes });
  process.exit(0);
}

const settings = {
  duration: positiveNumber('BENCH_DURATION', 10),
  warmup: positiveNumber('BENCH_WARMUP', 2, true),
  connections: positiveNumber('BENCH_CONNECTIONS', 10),
  pipelining: positiveNumber('BENCH_PIPELINING', 1),
  rounds: positiveNumber('BENCH_ROUNDS', 1),
  fanoutSubscribers: positiveNumber('BENCH_FANOUT_SUBSCRIBERS', 200),
  fanoutRate: positiveNumber('BENCH_FANOUT_RATE', 50),
  fanoutRooms: positiveNumber('BENCH_FANOUT_ROOMS', 1),
  fanoutInstances: positiveNumber('BENCH_FANOUT_INSTANCES', 1),
  equalLoad: process.env.BENCH_EQUAL_LOAD === '1',
  client: process.env.BENCH_CLIENT ?? 'polling',
};
if (!['polling', 'autocannon'].includes(settings.client)) {
  throw new Error(`BENCH_CLIENT: polling or autocannon, not ${settings.client}`);
}
if (settings.fanoutInstances > 2 || (settings.fanoutInstances === 2 && !process.env.REDIS_URL)) {
  throw new Error(
    'BENCH_FANOUT_INSTANCES: 1, or 2 with REDIS_URL (the instances share events through Redis)',
  );
}

/**
 * The scenarios, in the order they run. Each is
 *   { name, target: 'bare' | 'app', url, method, headers?, body?, baseline?, check? }
 * `body` may be an object (sent as JSON) or a string. `check(status, text)` is called on one request
 * before the load starts and returns an error message or nothing; the default accepts any 2xx.
 * Add GraphQL scenarios here, e.g.
 *   { name: 'graphql-user-bearer', target: 'app', method: 'POST', url: `${ctx.app}/graphql`,
 *     headers: { authorization: `Bearer ${ctx.token}` },
 *     body: { query: 'query($id: ID!) { user(id: $id) { id name } }', variables: { id: ctx.userId } },
 *     check: graphqlCheck }
 */
function buildScenarios(ctx) {
  const userPath = `/api/v1/users/${ctx.userId}`;
  return [
    {
      name: 'bare',
      target: 'bare',
      baseline: true,
      method: 'GET',
      url: `${ctx.bare}${userPath}`,
      pid: ctx.barePid,
    },
    {
      name: 'rest-get-user-bearer',
      target: 'app',
      pid: ctx.appPid,
      method: 'GET',
      url: `${ctx.app}${userPath}`,
      headers: { authorization: `Bearer ${ctx.token}` },
    },
    {
      // the same GET from a client that accepts compression (browsers, fetch): its answer is under
      // the 1 KiB threshold, so this measures deciding not to compress (docs/deployment.md)
      name: 'rest-get-user-accept-encoding',
      target: 'app',
      pid: ctx.appPid,
      method: 'GET',
      url: `${ctx.app}${userPath}`,
      headers: { authorization: `Bearer ${ctx.token}`, 'accept-encoding': 'gzip, deflate, br' },
    },
    {
      // an OAuth access token (RFC 9068 JWT): the per-request grant check included (docs/oauth.md)
      name: 'rest-get-user-oauth',
      target: 'app',
      pid: ctx.appPid,
      method: 'GET',
      url: `${ctx.app}${userPath}`,
      headers: { authorization: `Bearer ${ctx.oauthToken}` },
    },
    {
      name: 'rest-get-user-api-key',
      target: 'app',
      pid: ctx.appPid,
      method: 'GET',
      url: `${ctx.app}${userPath}`,
      headers: { 'x-api-key': ctx.apiKey },
    },
    {
      name: 'gql user(id)',
      target: 'app',
      pid: ctx.appPid,
      method: 'POST',
      url: `${ctx.app}/graphql`,
      headers: { authorization: `Bearer ${ctx.token}` },
      body: {
        query: 'query($id: ID!) { user(id: $id) { id name email role createdAt } }',
        variables: { id: ctx.userId },
      },
      check: graphqlCheck,
    },
    {
      name: 'gql 20 users with posts',
      target: 'app',
      pid: ctx.appPid,
      method: 'POST',
      url: `${ctx.app}/graphql`,
      headers: { authorization: `Bearer ${ctx.token}` },
      body: {
        query:
          '{ users(first: 20) { nodes { id name posts(first: 5) { totalCount nodes { id title } } } } }',
      },
      check: graphqlCheck,
    },
    // the conventional NestJS stack (bench/peer-server.mjs) over the same SQLite file, same requests
    ...[
      ['peer rest-get-user', 'rest-get-user-bearer', 'GET', userPath, undefined],
      [
        'peer gql user(id)',
        'gql user(id)',
        'POST',
        '/graphql',
        {
          query: 'query($id: ID!) { user(id: $id) { id name email role createdAt } }',
          variables: { id: ctx.userId },
        },
      ],
      [
        'peer gql 20 users with posts',
        'gql 20 users with posts',
        'POST',
        '/graphql',
        {
          query:
            '{ users(first: 20) { nodes { id name posts(first: 5) { totalCount nodes { id title } } } } }',
        },
      ],
    ].map(([name, twin, method, path, body]) => ({
      name,
      twin,
      target: 'peer',
      pid: ctx.peerPid,
      method,
      url: `${ctx.peer}${path}`,
      headers: { authorization: `Bearer ${ctx.token}` },
      body,
      check: body ? graphqlCheck : undefined,
    })),
    // the rate limiter's cost: the same request on two more app instances, limiter on (counters in
    // Redis when REDIS_URL is set, else in process) and off (RATE_LIMIT_ENABLED=false)
    {
      name: 'rest-get-user-limiter-on',
      target: 'limiter',
      method: 'GET',
      url: `${ctx.limiterOn}${userPath}`,
      pid: ctx.limiterOnPid,
      headers: { authorization: `Bearer ${ctx.token}` },
    },
    {
      name: 'rest-get-user-limiter-off',
      target: 'limiter',
      method: 'GET',
      url: `${ctx.limiterOff}${userPath}`,
      pid: ctx.limiterOffPid,
      headers: { authorization: `Bearer ${ctx.token}` },
    },
    // real-time fan-out (bench/fanout.mjs): graphql-ws subscribers on one room, REST posts at a steady rate
    {
      name: 'fanout',
      target: 'fanout',
      method: 'WS',
      url: `${ctx.app}/graphql`,
      pid: ctx.appPid,
    },
  ];
}

/** For GraphQL scenarios: HTTP 200 with `errors` is a failure too. */
export function graphqlCheck(status, text) {
  if (status < 200 || status > 299) {
    return `HTTP ${status}`;
  }
  const body = JSON.parse(text);
  if (Array.isArray(body.errors) && body.errors.length > 0) {
    return `GraphQL errors: ${JSON.stringify(body.errors).slice(0, 300)}`;
  }
  return undefined;
}

// --------------------------------------------------------------------------------------------------

const children = new Set();
let workDir;
let keepWorkDir = false;

if (args.help) {
  const source = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
  const usage = source.slice(
    0,
    source.findIndex((l) => !l.startsWith('//')),
  );
  console.log(usage.map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
  process.exit(0);
}

process.on('exit', () => {
  // Last resort: never leave a server behind.
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
    }
  }
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}

try {
  await main();
} catch (error) {
  keepWorkDir = true;
  console.error(`\nbench failed: ${error instanceof Error ? error.message : String(error)}`);
  await cleanup();
  process.exit(1);
}

async function main() {
  // Check --only against the scenario names before starting anything.
  selectScenarios(buildScenarios({ app: '', bare: '', token: '', apiKey: '', userId: '' }));

  const pin = cpuPinning();
  // a polling client spins on its CPU: without one of its own it would take the server's
  if (!pin || settings.pipelining > 1) {
    settings.client = 'autocannon';
  }
  if (pin) {
    const r = spawnSync('taskset', ['-pc', String(pin.client), String(process.pid)], {
      encoding: 'utf8',
    });
    if (r.status !== 0) {
      throw new Error(`taskset -pc ${pin.client} ${process.pid} failed: ${r.stderr}`);
    }
    console.log(
      `pinning: servers on CPU ${pin.server}, load generator (this process) on CPU ${pin.client}`,
    );
  } else {
    console.log('pinning: off (no taskset, fewer than 2 CPUs, or BENCH_NO_PIN=1)');
  }

  const mainJs = join(ROOT, 'dist', 'main.js');
  try {
    readFileSync(mainJs);
  } catch {
    throw new Error(`${mainJs} not found: run \`npm run build\` first (npm run bench does)`);
  }

  workDir = mkdtempSync(join(tmpdir(), 'atrium-bench-'));
  const tracingSink = args.tracing ? await startOtlpSink() : undefined;
  const {
    app,
    appProc,
    appEnv,
    appNodeArgs,
    appJwtPublicKey,
    token,
    apiKey,
    oauthToken,
    userId,
    userGet,
    peers,
  } = await startAppWithData('app', mainJs, pin, tracingSink?.env);
  // --compare <checkout>: the same app scenarios against another checkout's build, interleaved
  // (--tracing: against this build without tracing, bench/tracing.mjs)
  const compare = args.compare
    ? await startAppWithData('compare', join(resolve(args.compare), 'dist', 'main.js'), pin)
    : tracingSink
      ? await startAppWithData('compare', mainJs, pin)
      : undefined;

  // --- the baseline -------------------------------------------------------------------------------
  const barePort = await freePort();
  const bare = `http://127.0.0.1:${barePort}`;
  const bareProc = startChild(
    'bare',
    [join(ROOT, 'bench', 'bare-server.mjs')],
    {
      ...process.env,
      NODE_ENV: 'production',
      BARE_PORT: String(barePort),
      BARE_HOST: '127.0.0.1',
      BARE_USER_ID: userId,
      BARE_BODY: userGet.text,
    },
    pin?.server,
  );
  await waitReady(bareProc, `${bare}/health/ready`);
  const bareGet = await request('GET', `${bare}/api/v1/users/${userId}`);
  if (bareGet.text !== JSON.stringify(JSON.parse(userGet.text))) {
    throw new Error('the bare server does not return the same body as the app');
  }
  console.log(`bare server ready on ${bare}`);

  const dummy = { app: '', bare: '', token: '', apiKey: '', userId: '' };
  // --- the conventional stack over the app's SQLite file (bench/peer-server.mjs) -------------------
  const peerUrls = {};
  if (selectScenarios(buildScenarios(dummy)).some((s) => s.target === 'peer')) {
    const port = await freePort();
    const proc = startChild(
      'peer',
      [join(ROOT, 'bench', 'peer-server.mjs')],
      {
        ...process.env,
        NODE_ENV: 'production',
        PEER_PORT: String(port),
        PEER_DATABASE: join(workDir, 'app.sqlite'),
        PEER_JWT_PUBLIC_KEY: appJwtPublicKey,
      },
      pin?.server,
    );
    peerUrls.peer = `http://127.0.0.1:${port}`;
    peerUrls.peerPid = proc.pid;
    await waitReady(proc, `${peerUrls.peer}/health/ready`);
    console.log(
      `peer (NestJS on Express, TypeORM, passport-jwt, Apollo) ready on ${peerUrls.peer}`,
    );
  }

  // --- limiter on / off: same database, signing key and issuer, so the same token works ------------
  const limiterUrls = {};
  if (selectScenarios(buildScenarios(dummy)).some((s) => s.target === 'limiter')) {
    for (const [name, enabled] of [
      ['limiterOn', 'true'],
      ['limiterOff', 'false'],
    ]) {
      const port = await freePort();
      const env = { ...appEnv, PORT: String(port), RATE_LIMIT_ENABLED: enabled };
      if (process.env.REDIS_URL) {
        Object.assign(env, {
          REDIS_URL: process.env.REDIS_URL,
          REDIS_PREFIX: `atrium-bench-${port}:`,
        });
      }
      const proc = startChild(name, [...appNodeArgs, mainJs], env, pin?.server);
      limiterUrls[name] = `http://127.0.0.1:${port}`;
      limiterUrls[`${name}Pid`] = proc.pid;
      await waitReady(proc, `${limiterUrls[name]}/health/ready`);
    }
    console.log(
      `limiter on/off instances ready (${process.env.REDIS_URL ? 'counters in Redis' : 'in-process counters: set REDIS_URL for Redis'})`,
    );
  }

  // --- scenarios ----------------------------------------------------------------------------------
  const all = buildScenarios({
    app,
    appPid: appProc.pid,
    bare,
    barePid: bareProc.pid,
    token,
    apiKey,
    oauthToken,
    userId,
    ...peerUrls,
    ...limiterUrls,
  });
  if (args.list) {
    for (const s of all) {
      console.log(`${s.name}\t${s.method} ${s.url}`);
    }
    await cleanup();
    return;
  }
  const selected = selectScenarios(all);
  // each app scenario is followed by the same request on the --compare checkout (name + ' @compare')
  const compareScenarios = compare
    ? buildScenarios({
        ...compare,
        appPid: compare.appProc.pid,
        bare,
        barePid: bareProc.pid,
      })
    : [];
  const scenarios = selected.flatMap((s) => {
    const twin = compareScenarios.find((c) => c.name === s.name && c.target === 'app');
    return twin ? [s, { ...twin, name: `${s.name} @compare` }] : [s];
  });

  console.log(
    `\nload: ${settings.client === 'polling' ? 'closed loop, polling client (bench/paced-load.mjs)' : 'autocannon'}, ` +
      `${settings.connections} connections, pipelining ${settings.pipelining}, ` +
      `${settings.warmup}s warm-up + ${settings.duration}s per scenario\n`,
  );
  // BENCH_ROUNDS > 1: the load scenarios run that many times, interleaved (bare, a, b, bare, a, b,
  // ...), and each row reports the median round, so a busy moment of a shared machine hits every
  // scenario alike; the fan-out scenario runs once, after them.
  const measured = new Map();
  for (let round = 0; round < settings.rounds; round++) {
    let roundBase;
    const roundRows = new Map();
    for (const scenario of scenarios) {
      if (scenario.target === 'fanout') {
        continue;
      }
      if (round === 0) {
        await preflight(scenario);
      }
      if (settings.warmup > 0) {
        await load(scenario, settings.warmup);
      }
      const row = await measure(scenario);
      if (scenario.baseline) {
        roundBase = row;
        // the same fixed computation on the servers' CPU: a loaded machine shows here
        const reference = referenceTiming(pin?.server);
        row.referenceCpuUs = reference.cpuUs;
        row.referenceWallUs = reference.wallUs;
        console.log(
          `  ${settings.rounds > 1 ? `round ${round + 1}: ` : ''}reference computation on the ` +
            `servers' CPU: ${fmt(reference.cpuUs, 0)} µs CPU, ${fmt(reference.wallUs, 0)} µs wall`,
        );
      }
      // this round's CPU per request over the bare handler's in the same round: a busy moment of a
      // shared machine inflates both, so the ratio of one round holds where the absolutes swing
      row.cpuRatio =
        roundBase?.cpuUsPerReq > 0 && row.cpuUsPerReq > 0
          ? row.cpuUsPerReq / roundBase.cpuUsPerReq
          : undefined;
      const bareScenario = scenarios.find((s) => s.baseline);
      if (settings.equalLoad && scenario.target === 'app' && bareScenario && row.reqPerSec > 0) {
        // the same traffic to both: each server paced at 80% of this scenario's saturated req/s.
        // At its own saturation the bare server takes several requests per wake-up; at a given
        // traffic both pay the same wake-ups (bench/paced-load.mjs)
        const rate = Math.round(row.reqPerSec * 0.8);
        const app = await measure(scenario, { rate });
        const bare = await measure(bareScenario, { rate });
        // a failed request in either paced run spoils the figure: counted with the row's failures
        for (const paced of [app, bare]) {
          row.non2xx += paced.non2xx;
          row.errors += paced.errors;
          row.timeouts += paced.timeouts;
        }
        row.sameRate = rate;
        row.sameRateCpu = app.cpuUsPerReq;
        row.bareSameRateCpu = bare.cpuUsPerReq;
        row.cpuRatioSameRate =
          bare.cpuUsPerReq > 0 && app.cpuUsPerReq > 0
            ? app.cpuUsPerReq / bare.cpuUsPerReq
            : undefined;
      }
      roundRows.set(scenario.name, row);
      const ours = roundRows.get(scenario.name.replace(/ @compare$/, ''));
      if (scenario.name.endsWith(' @compare') && ours?.cpuUsPerReq > 0 && row.cpuUsPerReq > 0) {
        ours.cpuVsCompare = ours.cpuUsPerReq / row.cpuUsPerReq; // this round, same conditions
      }
      const twin = scenario.twin && roundRows.get(scenario.twin);
      if (twin?.cpuUsPerReq > 0 && row.cpuUsPerReq > 0) {
        twin.peerOverOurs = row.cpuUsPerReq / twin.cpuUsPerReq; // this round, same conditions
      }
      measured.set(scenario.name, [...(measured.get(scenario.name) ?? []), row]);
      console.log(
        `  ${settings.rounds > 1 ? `round ${round + 1}: ` : ''}${row.scenario}: ` +
          `${fmt(row.reqPerSec, 0)} req/s, p99 ${fmt(row.p99Ms, 0)} ms, ` +
          `CPU ${fmt(row.cpuUsPerReq, 1)} µs/request (${fmt(row.cpuRatio, 2)}x bare` +
          (row.cpuRatioSameRate !== undefined
            ? `; at ${row.sameRate} req/s each: ${fmt(row.sameRateCpu, 1)} vs ${fmt(row.bareSameRateCpu, 1)} µs, ${fmt(row.cpuRatioSameRate, 2)}x`
            : '') +
          `), non-2xx ${row.non2xx}, errors ${row.errors}`,
      );
    }
  }
  const results = [];
  for (const scenario of scenarios) {
    if (scenario.target === 'fanout') {
      results.push(await fanoutRow(scenario, app, token, peers));
      if (compare) {
        // the same fan-out against the --compare build, right after (old vs new in one run)
        results.push(
          await fanoutRow(
            { ...scenario, name: `${scenario.name} @compare`, pid: compare.appProc.pid },
            compare.app,
            compare.token,
            compare.peers,
          ),
        );
      }
    } else {
      results.push(medianRow(measured.get(scenario.name)));
    }
  }

  const base = results.find((r) => r.baseline);
  for (const r of results) {
    // fan-out counts delivered events, not requests: no ratio to the bare server
    r.ratio = base && base.reqPerSec > 0 && !r.fanout ? r.reqPerSec / base.reqPerSec : null;
    // server CPU per request against the bare handler's (median of the rounds' ratios): the
    // figure to compare across runs
    r.cpuRatio = typeof r.cpuRatio === 'number' && !r.fanout ? r.cpuRatio : null;
  }
  printTable(results);
  const bareRow = results.find((r) => r.baseline);
  if (typeof bareRow?.referenceCpuUs === 'number') {
    console.log(
      `bare handler ${fmt(bareRow.cpuUsPerReq, 1)} µs CPU/request; reference computation ` +
        `${fmt(bareRow.referenceCpuUs, 0)} µs CPU, ${fmt(bareRow.referenceWallUs, 0)} µs wall ` +
        `(medians; on a quiet machine wall ≈ CPU and the CPU figure stays put between runs)`,
    );
  }
  for (const r of results.filter((row) => typeof row.peerOverOurs === 'number')) {
    console.log(
      `${r.scenario}: ${fmt(r.peerOverOurs, 2)}x cheaper than the conventional stack in server CPU ` +
        `per request (median of ${settings.rounds} rounds' ratios)`,
    );
  }
  for (const r of results.filter((row) => typeof row.cpuVsCompare === 'number')) {
    console.log(
      `${r.scenario}: server CPU per request ${fmt((r.cpuVsCompare - 1) * 100, 1)}% against ` +
        `--compare (median of ${settings.rounds} rounds' ratios)`,
    );
  }
  const on = results.find((r) => r.scenario === 'rest-get-user-limiter-on');
  const off = results.find((r) => r.scenario === 'rest-get-user-limiter-off');
  if (on?.reqPerSec > 0 && off?.reqPerSec > 0) {
    // the server is pinned to one CPU and saturated: 1/throughput is its time per request
    console.log(
      `rate limiter overhead (${process.env.REDIS_URL ? 'Redis' : 'in-process'}): ` +
        `${fmt(1e6 / on.reqPerSec - 1e6 / off.reqPerSec, 1)} µs per request, ` +
        `${fmt((1 - on.reqPerSec / off.reqPerSec) * 100, 1)}% of throughput, ` +
        `p50 ${on.p50Ms} vs ${off.p50Ms} ms; ` +
        `server CPU ${fmt(on.cpuUsPerReq, 0)} vs ${fmt(off.cpuUsPerReq, 0)} µs per request ` +
        `(+${fmt(on.cpuUsPerReq - off.cpuUsPerReq, 0)} µs)\n`,
    );
  }

  if (tracingSink) {
    console.log(tracingSink.describe());
  }
  if (args.json) {
    writeFileSync(
      resolve(args.json),
      JSON.stringify({ settings, pinning: pin ?? null, results }, null, 2) + '\n',
    );
    console.log(`results written to ${resolve(args.json)}`);
  }

  const bad = results.filter((r) => r.non2xx > 0 || r.errors > 0 || r.timeouts > 0);
  keepWorkDir = bad.length > 0;
  await cleanup();
  if (bad.length > 0) {
    for (const r of bad) {
      console.error(
        `FAIL ${r.scenario}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts ` +
          `(status codes: ${JSON.stringify(r.statusCodes)})`,
      );
    }
    process.exit(1);
  }
}

// --------------------------------------------------------------------------------------------------

/**
 * Starts one built app (`mainJs`) on a fresh SQLite file and sets up the bench data through its public
 * API. `name` labels its log file and database.
 */
async function startAppWithData(name, mainJs, pin, extraEnv = {}) {
  const appPort = await freePort();
  const app = `http://127.0.0.1:${appPort}`;

  // --- the app under test -----------------------------------------------------------------------
  const appEnv = { ...process.env };
  delete appEnv.REDIS_URL;
  // a signing key of ours: a second instance (fan-out) and the peer stack accept the app's tokens
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  appEnv.JWT_PRIVATE_KEY = keys.privateKey.export({ type: 'pkcs8', format: 'pem' });
  const appJwtPublicKey = keys.publicKey.export({ type: 'spki', format: 'pem' });
  if (settings.fanoutInstances === 2) {
    // the fan-out over two instances: both on one database and one Redis namespace
    Object.assign(appEnv, {
      REDIS_URL: process.env.REDIS_URL,
      REDIS_PREFIX: `atrium-bench-${name}-${appPort}:`,
    });
  }
  Object.assign(appEnv, {
    NODE_ENV: process.env.BENCH_NODE_ENV ?? 'production',
    PORT: String(appPort),
    HOST: '127.0.0.1',
    PUBLIC_URL: app,
    DATABASE_URL: `sqlite:${join(workDir, `${name}.sqlite`)}`,
    LOG_LEVEL: 'warn',
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    RATE_LIMIT: '100000000',
    // the GraphQL scenarios spend query-cost points: a budget that load cannot exhaust
    GRAPHQL_COST_BUDGET: '1000000000',
    // the fan-out scenario opens BENCH_FANOUT_SUBSCRIBERS sockets with one identity
    WS_MAX_CONNECTIONS_PER_IDENTITY: '100000',
    ...extraEnv,
  });
  const appNodeArgs = (process.env.BENCH_APP_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const appProc = startChild(name, [...appNodeArgs, mainJs], appEnv, pin?.server);
  await waitReady(appProc, `${app}/health/ready`);
  console.log(`${name} ready on ${app} (log: ${appProc.logFile})`);
  /** BENCH_FANOUT_INSTANCES=2: a second instance of the same build, database and Redis namespace */
  const peers = [];
  if (settings.fanoutInstances === 2) {
    const peerPort = await freePort();
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const peerProc = startChild(
      `${name}-2`,
      [...appNodeArgs, mainJs],
      // the same PUBLIC_URL: it is the tokens' issuer
      { ...appEnv, PORT: String(peerPort) },
      pin?.server,
    );
    await waitReady(peerProc, `${peerUrl}/health/ready`);
    console.log(`${name}-2 ready on ${peerUrl} (log: ${peerProc.logFile})`);
    peers.push({ url: peerUrl, pid: peerProc.pid });
  }

  // --- data, through the public API --------------------------------------------------------------
  const tokenRes = await request('POST', `${app}/api/v1/auth/token`, {
    body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
  });
  const token = tokenRes.json?.access_token;
  if (typeof token !== 'string') {
    throw new Error(
      `POST /api/v1/auth/token returned no access_token: ${tokenRes.text.slice(0, 300)}`,
    );
  }
  const auth = { authorization: `Bearer ${token}` };

  const userRes = await request('POST', `${app}/api/v1/users`, {
    headers: auth,
    body: { name: 'Bench User', email: 'bench-user@example.com' },
    expect: 201,
  });
  const userId = userRes.json?.data?.id;
  if (typeof userId !== 'string') {
    throw new Error(`POST /api/v1/users returned no data.id: ${userRes.text.slice(0, 300)}`);
  }

  const keyRes = await request('POST', `${app}/api/v1/api-keys`, {
    headers: auth,
    body: { name: 'bench' },
    expect: 201,
  });
  const apiKey = keyRes.json?.data?.key;
  if (typeof apiKey !== 'string') {
    throw new Error(`POST /api/v1/api-keys returned no data.key: ${keyRes.text.slice(0, 300)}`);
  }

  const oauthToken = await oauthAccessToken(app, token, ADMIN_EMAIL, ADMIN_PASSWORD);

  const userGet = await request('GET', `${app}/api/v1/users/${userId}`, { headers: auth });

  // GraphQL page of 20 users with their posts: 18 more users and a few posts (by the admin)
  await seedUsersWithPosts(app, auth);

  return {
    app,
    appProc,
    appEnv,
    appNodeArgs,
    appJwtPublicKey,
    token,
    auth,
    userId,
    apiKey,
    oauthToken,
    userGet,
    peers,
  };
}

/** One measured load of a scenario: throughput, latency and the server's CPU time per request. */
async function measure(scenario, { rate } = {}) {
  const cpuBefore = cpuMs(scenario.pid);
  const r = await load(scenario, settings.duration, rate);
  const cpuAfter = cpuMs(scenario.pid);
  return {
    scenario: scenario.name,
    baseline: Boolean(scenario.baseline),
    reqPerSec: r.requests.average,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    total: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes: r.statusCodeStats,
    // server CPU per request (utime + stime of its pid over the window): robust to a busy machine
    cpuUsPerReq:
      cpuBefore !== undefined && cpuAfter !== undefined && r.requests.total > 0
        ? ((cpuAfter - cpuBefore) * 1000) / r.requests.total
        : undefined,
  };
}

/** The rounds of one scenario as one row: median CPU per request, req/s and p99; failures summed. */
function medianRow(rows) {
  const median = (key) => {
    const values = rows
      .map((r) => r[key])
      .filter((v) => typeof v === 'number')
      .sort((a, b) => a - b);
    return values.length === 0 ? undefined : values[Math.floor((values.length - 1) / 2)];
  };
  const sum = (key) => rows.reduce((n, r) => n + r[key], 0);
  return {
    ...rows[0],
    reqPerSec: median('reqPerSec'),
    p50Ms: median('p50Ms'),
    p99Ms: median('p99Ms'),
    cpuUsPerReq: median('cpuUsPerReq'),
    cpuRatio: median('cpuRatio'),
    cpuRatioSameRate: median('cpuRatioSameRate'),
    sameRateCpu: median('sameRateCpu'),
    bareSameRateCpu: median('bareSameRateCpu'),
    cpuVsCompare: median('cpuVsCompare'),
    peerOverOurs: median('peerOverOurs'),
    referenceCpuUs: median('referenceCpuUs'),
    referenceWallUs: median('referenceWallUs'),
    cpuRounds: rows.map((r) => r.cpuUsPerReq),
    total: sum('total'),
    non2xx: sum('non2xx'),
    errors: sum('errors'),
    timeouts: sum('timeouts'),
  };
}

/** Runs the fan-out scenario; its row reads: req/s = delivered events/s, latencies = delivery latency. */
async function fanoutRow(scenario, app, token, peers = []) {
  // every instance's CPU (BENCH_FANOUT_INSTANCES=2: both, on the server CPU)
  const pids = [scenario.pid, ...peers.map((p) => p.pid)];
  const totalCpuMs = () => {
    const each = pids.map((pid) => cpuMs(pid));
    return each.some((v) => v === undefined) ? undefined : each.reduce((a, b) => a + b, 0);
  };
  let cpuBefore;
  const f = await runFanout({
    app,
    apps: [app, ...peers.map((p) => p.url)],
    token,
    subscribers: settings.fanoutSubscribers,
    rate: settings.fanoutRate,
    rooms: settings.fanoutRooms,
    duration: settings.duration,
    warmup: settings.warmup,
    onMeasureStart: () => (cpuBefore = totalCpuMs()),
  });
  const cpuAfter = totalCpuMs();
  const serverCpuMs =
    cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined;
  const serverCpuPct = serverCpuMs !== undefined ? (serverCpuMs / f.windowMs) * 100 : undefined;
  /** server CPU (all instances) per delivered event, µs: what one more subscriber costs per message */
  const cpuUsPerEvent =
    serverCpuMs !== undefined && f.delivered > 0 ? (serverCpuMs * 1000) / f.delivered : undefined;
  console.log(
    `  ${scenario.name}: ${f.subscribers} subscribers in ${f.rooms} room(s) on ${f.instances} instance(s) x ${f.messages} messages at ${f.rate}/s -> ` +
      `${f.delivered}/${f.expected} delivered, ${fmt(f.eventsPerSec, 0)} events/s, ` +
      `delivery latency p50 ${fmt(f.p50Ms, 1)} ms, p99 ${fmt(f.p99Ms, 1)} ms, max ${fmt(f.maxMs, 1)} ms; ` +
      `CPU: server ${fmt(serverCpuPct, 0)}% (${fmt(cpuUsPerEvent, 1)} µs per delivered event), load generator ${fmt(f.clientCpuPct, 0)}%` +
      (f.postErrors ? `, ${f.postErrors} failed posts` : ''),
  );
  return {
    scenario: scenario.name,
    baseline: false,
    reqPerSec: f.eventsPerSec,
    p50Ms: f.p50Ms,
    p99Ms: f.p99Ms,
    total: f.delivered,
    non2xx: f.postErrors,
    // a lost event on one instance is a defect (in-process delivery loses nothing)
    errors: f.lost,
    timeouts: 0,
    statusCodes: {},
    cpuUsPerReq: cpuUsPerEvent,
    fanout: { ...f, serverCpuPct, cpuUsPerEvent },
  };
}

/** utime + stime of a process in ms (Linux /proc), or undefined. */
function cpuMs(pid) {
  if (pid === undefined) {
    return undefined;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

function positiveNumber(name, fallback, allowZero = false) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') {
    return fallback;
  }
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || (n === 0 && !allowZero)) {
    console.error(
      `${name} must be a ${allowZero ? 'non-negative' : 'positive'} number, got "${raw}"`,
    );
    process.exit(2);
  }
  return n;
}

function selectScenarios(all) {
  if (!args.only || args.only.length === 0) {
    return all;
  }
  const wanted = new Set(
    args.only
      .flatMap((o) => o.split(','))
      .map((s) => s.trim())
      .filter(Boolean),
  );
  const unknown = [...wanted].filter((name) => !all.some((s) => s.name === name));
  if (unknown.length > 0) {
    throw new Error(
      `unknown scenario(s) ${unknown.join(', ')}; known: ${all.map((s) => s.name).join(', ')}`,
    );
  }
  // The baseline always runs (the ratio needs it) unless --no-baseline.
  return all.filter((s) => wanted.has(s.name) || (s.baseline && !args['no-baseline']));
}

/** CPUs to pin to, or null. Uses the first two CPUs this process is allowed on. */
function cpuPinning() {
  if (process.env.BENCH_NO_PIN === '1') {
    return null;
  }
  const probe = spawnSync('taskset', ['-pc', String(process.pid)], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    return null;
  }
  // "pid 123's current affinity list: 0-3,6"
  const list = probe.stdout.split(':').pop().trim();
  const cpus = list.split(',').flatMap((part) => {
    const [a, b] = part.split('-').map(Number);
    return b === undefined ? [a] : Array.from({ length: b - a + 1 }, (_, i) => a + i);
  });
  const server = process.env.BENCH_SERVER_CPU ?? cpus[0];
  const client = process.env.BENCH_CLIENT_CPU ?? cpus[1];
  if (server === undefined || client === undefined || String(server) === String(client)) {
    return null;
  }
  return { server: String(server), client: String(client) };
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolvePort(port));
    });
  });
}

/** Start `node <argv>` (pinned with taskset when cpu is given); output goes to a log file. */
function startChild(name, argv, env, cpu) {
  const logFile = join(workDir, `${name}.log`);
  const log = createWriteStream(logFile);
  const [cmd, cmdArgs] =
    cpu === undefined
      ? [process.execPath, argv]
      : ['taskset', ['-c', String(cpu), process.execPath, ...argv]];
  const child = spawn(cmd, cmdArgs, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  child.logFile = logFile;
  child.label = name;
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

async function waitReady(child, url) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `${child.label} exited (${child.exitCode ?? child.signalCode}) before it was ready\n` +
          tail(child.logFile),
      );
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) {
        return;
      }
      last = `HTTP ${res.status}`;
    } catch (error) {
      last = error instanceof Error ? (error.cause?.code ?? error.message) : String(error);
    }
    await sleep(200);
  }
  throw new Error(
    `${child.label} not ready at ${url} after ${READY_TIMEOUT_MS / 1000}s (${last})\n${tail(child.logFile)}`,
  );
}

function tail(file, lines = 40) {
  try {
    const text = readFileSync(file, 'utf8').trimEnd();
    return `--- last lines of ${file} ---\n${text.split('\n').slice(-lines).join('\n')}`;
  } catch {
    return `(no log at ${file})`;
  }
}

/** One HTTP request for the setup phase; throws unless the status is `expect` (default: any 2xx). */
async function request(method, url, { headers = {}, body, expect } = {}) {
  const init = { method, headers: { accept: 'application/json', ...headers } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  const ok = expect === undefined ? res.status >= 200 && res.status < 300 : res.status === expect;
  if (!ok) {
    throw new Error(
      `${method} ${new URL(url).pathname} -> ${res.status} (expected ${expect ?? '2xx'}): ${text.slice(0, 300)}`,
    );
  }
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

function requestBody(scenario) {
  if (scenario.body === undefined || typeof scenario.body === 'string') {
    return scenario.body;
  }
  return JSON.stringify(scenario.body);
}

function requestHeaders(scenario) {
  const headers = { accept: 'application/json', ...(scenario.headers ?? {}) };
  if (
    scenario.body !== undefined &&
    !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')
  ) {
    headers['content-type'] = 'application/json';
  }
  return headers;
}

/** One request before the load: a scenario that cannot succeed once is not worth 10 seconds. */
async function preflight(scenario) {
  const res = await fetch(scenario.url, {
    method: scenario.method ?? 'GET',
    headers: requestHeaders(scenario),
    body: requestBody(scenario),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  const check =
    scenario.check ?? ((status) => (status >= 200 && status < 300 ? undefined : `HTTP ${status}`));
  const problem = check(res.status, text);
  if (problem) {
    throw new Error(
      `scenario ${scenario.name}: preflight failed: ${problem}: ${text.slice(0, 300)}`,
    );
  }
}

/**
 * `settings.connections` at a time, `rate` requests per second (evenly paced), or without a rate as
 * many as the server answers: the polling client (default when pinned) never sleeps, so the server's
 * answers do not pay to wake it; autocannon sleeps between answers once the server is the slower
 * side (bench/README.md).
 */
function load(scenario, duration, rate = settings.client === 'polling' ? Infinity : undefined) {
  if (rate !== undefined) {
    return pacedLoad({
      url: scenario.url,
      method: scenario.method ?? 'GET',
      headers: requestHeaders(scenario),
      body: requestBody(scenario),
      rate,
      duration,
      connections: settings.connections,
    });
  }
  return autocannon({
    url: scenario.url,
    method: scenario.method ?? 'GET',
    headers: requestHeaders(scenario),
    body: requestBody(scenario),
    connections: settings.connections,
    pipelining: settings.pipelining,
    duration,
    title: scenario.name,
  });
}

function fmt(n, digits) {
  return typeof n === 'number' && Number.isFinite(n) ? n.toFixed(digits) : '-';
}

function printTable(results) {
  // autocannon records latency in whole milliseconds, the polling client in fractions of one
  const header = [
    'scenario',
    'req/s (mean)',
    'p99 ms',
    'non-2xx',
    'errors',
    'vs bare',
    'µs CPU/request',
    'CPU vs bare',
    ...(settings.equalLoad ? ['CPU vs bare, same req/s'] : []),
  ];
  const rows = results.map((r) => [
    r.scenario,
    fmt(r.reqPerSec, 0),
    r.p99Ms < 1 ? '<1' : fmt(r.p99Ms, 0),
    String(r.non2xx),
    String(r.errors),
    r.ratio === null ? '-' : `${fmt(r.ratio, 2)}x`,
    r.fanout ? '-' : fmt(r.cpuUsPerReq, 1),
    r.cpuRatio === null ? '-' : `${fmt(r.cpuRatio, 2)}x`,
    ...(settings.equalLoad
      ? [typeof r.cpuRatioSameRate === 'number' ? `${fmt(r.cpuRatioSameRate, 2)}x` : '-']
      : []),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(`\n${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const row of rows) {
    console.log(line(row));
  }
  console.log('');
}

async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

async function cleanup() {
  await Promise.all([...children].map((child) => stopChild(child)));
  if (workDir) {
    if (keepWorkDir) {
      console.error(`logs and database kept in ${workDir}`);
    } else {
      rmSync(workDir, { recursive: true, force: true });
    }
    workDir = undefined;
  }
}
