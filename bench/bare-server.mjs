// Baseline for the benchmark: a bare Fastify server (no Nest, no auth, no database) that answers
// GET /api/v1/users/:id with the same JSON body the app returned for that user. bench/run.mjs starts
// it as a child process; it can also be run alone:
//
//   BARE_PORT=4000 BARE_USER_ID=usr_x BARE_BODY='{"data":{"id":"usr_x"}}' node bench/bare-server.mjs
//
// Environment: BARE_PORT (default 0 = any free port), BARE_HOST (default 127.0.0.1),
// BARE_USER_ID (the one id that exists; others are 404), BARE_BODY (JSON text of the 200 body).
import Fastify from 'fastify';

const port = Number(process.env.BARE_PORT ?? 0);
const host = process.env.BARE_HOST ?? '127.0.0.1';
const userId = process.env.BARE_USER_ID ?? 'usr_bench';
// Parsed once and re-serialized per request, as a real handler returning an object would be.
const body = JSON.parse(process.env.BARE_BODY ?? JSON.stringify({ data: { id: userId } }));

const app = Fastify({ logger: false });

app.get('/api/v1/users/:id', async (request, reply) => {
  if (request.params.id !== userId) {
    reply.code(404);
    return { error: { code: 'not_found', message: 'User not found' } };
  }
  return body;
});

app.get('/health/ready', async () => ({ status: 'ok' }));

async function shutdown() {
  try {
    await app.close();
  } finally {
    process.exit(0);
  }
}
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());

try {
  const address = await app.listen({ port, host });
  console.log(`bare server listening on ${address}`);
} catch (error) {
  console.error('bare server failed to start:', error);
  process.exit(1);
}
