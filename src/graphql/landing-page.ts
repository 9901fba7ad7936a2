import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { ApolloServerPlugin } from '@apollo/server';
import type { FastifyInstance } from 'fastify';
import { DomainError } from '../common/errors.js';
import { etagOf, noneMatchHits } from '../http/etag.js';
import { sendError } from '../http/http-exception.filter.js';
import { routeUrl } from '../common/route-url.js';

/**
 * The development landing page of /graphql: GraphiQL served entirely by this application (docs/graphql.md,
 * "Explorer"). React, ReactDOM, GraphiQL and the graphql-ws client are the prebuilt UMD bundles of the
 * pinned npm packages, read from node_modules once at boot; the page works with no network beyond this
 * server. Queries and mutations go over HTTP, subscriptions over graphql-transport-ws to the page's own
 * origin with the Headers pane as the `connection_init` payload.
 */
const IDE_ASSETS_PATH = '/graphql-ide';

/**
 * Only same-origin scripts, and no inline script at all: the page's own code is a file too.
 * GraphiQL sets inline `style` attributes (panes, resizers), hence 'unsafe-inline' for styles only.
 * `connect-src 'self'` covers the page's own ws:/wss: origin too (CSP Level 3).
 */
const LANDING_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Storage in the tab's memory: GraphiQL keeps its tabs, query and headers there, so nothing this page
 * holds (a pasted token above all) reaches localStorage or outlives the tab.
 */
const PAGE_SCRIPT = `'use strict';
(function () {
  var memory = new Map();
  var storage = {
    getItem: function (key) { return memory.has(key) ? memory.get(key) : null; },
    setItem: function (key, value) { memory.set(key, String(value)); },
    removeItem: function (key) { memory.delete(key); },
    clear: function () { memory.clear(); },
    key: function (index) { var keys = Array.from(memory.keys()); return index < keys.length ? keys[index] : null; },
    get length() { return memory.size; }
  };
  var url = location.origin + location.pathname;
  var wsUrl = url.replace(/^http/, 'ws');
  var overHttp = GraphiQL.createFetcher({ url: url });

  // The kind of the operation that runs (the named one, else the first), read from the text sent:
  // GraphiQL's parsed document can lag behind the editor, and a subscription sent over HTTP is a 400.
  function operationKind(params) {
    var text = params.query.replace(/"""[\\s\\S]*?"""|"(?:[^"\\\\\\n]|\\\\.)*"|#[^\\n]*/g, ' ');
    var token = /[{}()]|\\b(query|mutation|subscription|fragment)\\b\\s*([_A-Za-z][_0-9A-Za-z]*)?/g;
    var ops = [];
    var depth = 0;
    var parens = 0;
    var header = false;
    var m;
    while ((m = token.exec(text))) {
      if (m[0] === '(') { parens += 1; }
      else if (m[0] === ')') { parens -= 1; }
      else if (parens > 0) { continue; }
      else if (m[0] === '{') {
        if (depth === 0 && !header) { ops.push({ kind: 'query' }); }
        header = false;
        depth += 1;
      } else if (m[0] === '}') { depth -= 1; }
      else if (depth === 0) {
        header = true;
        if (m[1] !== 'fragment') { ops.push({ kind: m[1], name: m[2] }); }
      }
    }
    var named = ops.filter(function (op) { return op.name === params.operationName; });
    var op = params.operationName && named.length > 0 ? named[0] : ops[0];
    return op ? op.kind : 'query';
  }

  function closeError(event) {
    return new Error('WebSocket closed: ' + event.code + (event.reason ? ' ' + event.reason : ''));
  }

  // one graphql-transport-ws connection per subscription, its connection_init payload being the
  // Headers pane (e.g. {"Authorization": "Bearer ..."}): the server reads credentials there
  function overWebSocket(params, headers) {
    return {
      subscribe: function (sink) {
        var client = graphqlWs.createClient({
          url: wsUrl,
          connectionParams: headers || {},
          lazy: true,
          retryAttempts: 0
        });
        var done = false;
        function end() { done = true; client.dispose(); }
        var unsubscribe = client.subscribe(params, {
          next: function (value) { sink.next(value); },
          error: function (error) {
            if (done) { return; }
            end();
            if (Array.isArray(error)) { sink.next({ errors: error }); sink.complete(); }
            else if (error && typeof error.code === 'number') { sink.error(closeError(error)); }
            else { sink.error(error instanceof Error ? error : new Error(String(error))); }
          },
          complete: function () { if (!done) { end(); sink.complete(); } }
        });
        return { unsubscribe: function () { if (!done) { unsubscribe(); end(); } } };
      }
    };
  }

  function fetcher(params, options) {
    if (operationKind(params) === 'subscription') {
      return overWebSocket(params, options && options.headers);
    }
    return overHttp(params, options);
  }
  var query = [
    '# Paste a token in Headers (below):',
    '#   {"Authorization": "Bearer <token>"}',
    '#   or {"X-API-Key": "atr_..."}',
    '# It stays in memory (no localStorage).',
    '',
    '{',
    '  me {',
    '    id',
    '  }',
    '}',
    ''
  ].join('\\n');
  // GraphiQL's CodeMirror editors are textareas with no name (axe-core: "Form elements must have
  // labels"); GraphiQL has no option for it, so each is named here, again whenever GraphiQL renders
  // an editor anew (a tab switch, the Variables/Headers toggle).
  var EDITOR_NAMES = [
    ['.graphiql-query-editor', 'Query editor'],
    ['.graphiql-editor-tool .graphiql-editor:nth-child(1)', 'Variables editor (JSON)'],
    ['.graphiql-editor-tool .graphiql-editor:nth-child(2)', 'Headers editor (JSON)'],
    ['.graphiql-response', 'Response (read only)']
  ];
  function nameEditors() {
    EDITOR_NAMES.forEach(function (entry) {
      document.querySelectorAll(entry[0] + ' textarea').forEach(function (area) {
        if (area.getAttribute('aria-label') !== entry[1]) { area.setAttribute('aria-label', entry[1]); }
      });
    });
  }
  new MutationObserver(nameEditors).observe(document.getElementById('graphiql'), { childList: true, subtree: true });
  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      storage: storage,
      shouldPersistHeaders: false,
      isHeadersEditorEnabled: true,
      defaultEditorToolsVisibility: 'headers',
      defaultQuery: query
    })
  );
})();
`;

const PAGE_STYLE = `html, body { height: 100%; margin: 0; }
body { display: flex; flex-direction: column; font-family: system-ui, sans-serif; }
#atrium-notice { margin: 0; padding: 6px 12px; font-size: 13px; background: #fff8d6; color: #3d3500; border-bottom: 1px solid #e6d98c; }
#atrium-notice code { font-size: 12px; }
#graphiql { flex: 1; min-height: 0; }
.atrium-visually-hidden { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
`;

const PAGE_HTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Atrium GraphQL</title>
<link rel="stylesheet" href="graphql-ide/graphiql.min.css">
<link rel="stylesheet" href="graphql-ide/atrium-page.css">
</head>
<body>
<header>
<h1 class="atrium-visually-hidden">Atrium GraphQL</h1>
<p id="atrium-notice" role="note">Paste a token in <strong>Headers</strong>, e.g. <code>{"Authorization": "Bearer …"}</code> or <code>{"X-API-Key": "atr_…"}</code>. Tokens stay in this tab's memory only: nothing on this page is saved in localStorage, and a reload forgets them.</p>
</header>
<main id="graphiql">Loading…</main>
<script src="graphql-ide/react.production.min.js"></script>
<script src="graphql-ide/react-dom.production.min.js"></script>
<script src="graphql-ide/graphiql.min.js"></script>
<script src="graphql-ide/graphql-ws.min.js"></script>
<script src="graphql-ide/atrium-page.js"></script>
</body>
</html>
`;

interface Asset {
  type: string;
  body: Buffer;
  etag: string;
}

function packageFile(pkg: string, file: string): Buffer {
  const require = createRequire(import.meta.url);
  return readFileSync(join(dirname(require.resolve(`${pkg}/package.json`)), file));
}

function asset(type: string, body: Buffer): Asset {
  return { type, body, etag: etagOf(body) };
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

function loadAssets(): Map<string, Asset> {
  return new Map([
    ['react.production.min.js', asset(JS, packageFile('react', 'umd/react.production.min.js'))],
    [
      'react-dom.production.min.js',
      asset(JS, packageFile('react-dom', 'umd/react-dom.production.min.js')),
    ],
    ['graphiql.min.js', asset(JS, packageFile('graphiql', 'graphiql.min.js'))],
    ['graphiql.min.css', asset(CSS, packageFile('graphiql', 'graphiql.min.css'))],
    ['graphql-ws.min.js', asset(JS, packageFile('graphql-ws', 'umd/graphql-ws.min.js'))],
    ['atrium-page.js', asset(JS, Buffer.from(PAGE_SCRIPT))],
    ['atrium-page.css', asset(CSS, Buffer.from(PAGE_STYLE))],
  ]);
}

/** Apollo's landing page hook: the HTML above for browsers on GET /graphql. */
export const selfHostedGraphiql: ApolloServerPlugin = {
  serverWillStart() {
    return Promise.resolve({
      renderLandingPage: () => Promise.resolve({ html: PAGE_HTML }),
    });
  },
};

/**
 * Serves the page's scripts and styles under IDE_ASSETS_PATH (a fixed list, nothing else from disk),
 * and gives the HTML page at `path` its own Content-Security-Policy.
 */
export function registerLandingPage(fastify: FastifyInstance, path: string): void {
  const assets = loadAssets();
  fastify.get<{ Params: { file: string } }>(`${IDE_ASSETS_PATH}/:file`, (req, reply) => {
    const found = assets.get(req.params.file);
    if (!found) {
      sendError(reply, new DomainError('not_found', `No asset ${req.params.file}`));
      return reply;
    }
    void reply.header('ETag', found.etag).header('Cache-Control', 'no-cache');
    if (noneMatchHits(req.headers['if-none-match'], found.etag)) {
      return reply.code(304).send();
    }
    return reply.type(found.type).send(found.body);
  });
  fastify.addHook('onSend', (req, reply, payload, done) => {
    if (
      routeUrl(req) === path &&
      String(reply.getHeader('content-type') ?? '').startsWith('text/html')
    ) {
      void reply.header('Content-Security-Policy', LANDING_PAGE_CSP);
    }
    done(null, payload);
  });
}
