// Cost of the JSON body shape check (src/http/json-shape.ts) against the parse it precedes:
// for each body, the time of jsonShapeViolation alone, JSON.parse alone, and Fastify's own JSON
// parser (secure-json-parse, what the app ran before), median of several runs, in µs per body.
// Usage: npm run build && node bench/json-shape.mjs
import { createRequire } from 'node:module';
import { jsonShapeViolation } from '../dist/common/json-shape.js';

const require = createRequire(import.meta.url);
const secureJson = require('secure-json-parse');
const limits = { maxDepth: 32, maxItems: 10_000 };

const user = JSON.stringify({
  name: 'Ada Lovelace',
  email: 'ada.lovelace@example.com',
  password: 'correct horse battery staple',
  age: 36,
});
const batch = JSON.stringify({
  operations: Array.from({ length: 100 }, (_, i) => ({
    op: 'create',
    data: { name: `User ${i}`, email: `user${i}@example.com`, password: `password-${i}-long` },
  })),
});
const graphql = JSON.stringify({
  query:
    'mutation($input: CreatePostInput!) { createPost(input: $input) { id title body author { id name } } }',
  variables: { input: { title: 'Hello', body: 'x'.repeat(2_000), tags: ['a', 'b', 'c'] } },
  operationName: null,
});
const bigText = JSON.stringify({
  title: 'big',
  body: 'lorem ipsum dolor sit amet '.repeat(38_000),
});
// worst cases: a quote every 10 characters, and nothing but numbers
const quoted = JSON.stringify({ title: 'big', body: 'lorem "ip" '.repeat(95_000) });
const numbers = JSON.stringify({ values: Array.from({ length: 9_000 }, (_, i) => i * 1234.5) });
const bodies = {
  'user (POST /users)': user,
  'batch of 100': batch,
  'GraphQL mutation': graphql,
  '~1 MiB text': bigText,
  '~1 MiB text, many \\"': quoted,
  '9,000 numbers': numbers,
};

function timeUs(fn, text) {
  const iterations = Math.max(20, Math.min(200_000, Math.floor(20_000_000 / text.length)));
  for (let i = 0; i < Math.min(iterations, 2_000); i++) {
    fn(text);
  } // warm-up
  const runs = [];
  for (let r = 0; r < 7; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) {
      fn(text);
    }
    runs.push(Number(process.hrtime.bigint() - start) / 1_000 / iterations);
  }
  return runs.sort((a, b) => a - b)[3];
}

const rows = [];
for (const [name, text] of Object.entries(bodies)) {
  const scan = timeUs((s) => jsonShapeViolation(s, limits), text);
  const parse = timeUs((s) => JSON.parse(s), text);
  const secure = timeUs(
    (s) => secureJson.parse(s, { protoAction: 'error', constructorAction: 'error' }),
    text,
  );
  rows.push({
    body: name,
    bytes: text.length,
    'scan µs': scan.toFixed(2),
    'JSON.parse µs': parse.toFixed(2),
    'secure-json-parse µs': secure.toFixed(2),
    'scan / JSON.parse': `${((scan / parse) * 100).toFixed(0)} %`,
  });
}
console.table(rows);
