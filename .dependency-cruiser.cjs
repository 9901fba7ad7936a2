// The layering rules of Atrium (CONTRIBUTING.md, "House style"), checked by `npm run lint:deps`
// and by .ci/run. Every rule is an error: a new violation fails CI. Computed imports
// (`import(variable)`) are invisible to a dependency graph; ESLint refuses them in src/
// (eslint.config.js), so every import is one this graph sees. Folder cycles are checked by
// .dependency-cruiser-folders.cjs (the same options, one rule), the second half of `lint:deps`.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-file-cycles',
      severity: 'error',
      comment:
        'No file imports itself through others (README, "Layout"): a lower layer that needs a higher one declares what it needs and the module wiring binds it.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'data-layer-not-to-transports',
      severity: 'error',
      comment:
        'Repositories and services sit below the transports: they never import GraphQL (src/graphql/) or HTTP (src/http/) code. A type both sides need lives in src/database/ or src/common/.',
      from: { path: '^src/.+\\.(repository|service)\\.ts$' },
      to: { path: '^src/(graphql|http)/' },
    },
    {
      name: 'transports-not-to-paging',
      severity: 'error',
      comment:
        'Controllers and resolvers only map a page to their wire shape (docs/lists.md, "Paging module"): the cursor codec, the keyset SQL, the GraphQL windows and the page reads (src/database/paging.ts, page-reader.ts) are called by services and repositories, which answer one page value whose cursors are already encoded (PageValue of src/database/connection-value.ts: the connection as it is, `restPageOf` for REST).',
      from: { path: '^src/.+\\.(controller|resolver)\\.ts$' },
      to: { path: '^src/database/(paging|page-reader)\\.ts$' },
    },
    {
      name: 'repository-not-to-mapper',
      severity: 'error',
      comment:
        'A repository returns rows or domain objects; a mapper (*.mapper.ts) turns them into REST bodies and GraphQL models, a layer above. Row shapes live in *.row.ts beside the repository.',
      from: { path: '\\.repository\\.ts$' },
      to: { path: '\\.mapper\\.ts$' },
    },
    {
      name: 'no-library-internals',
      severity: 'error',
      comment:
        'No deep import of a library file the package does not publish as an entry point (e.g. oidc-provider/lib/helpers/...): an upgrade moves them without notice. The few reach-ins the app needs are isolated in src/common/library-internals.ts (the one module allowed here), each with a unit test that fails on an upgrade that moves it.',
      from: { pathNot: '^src/common/library-internals\\.ts$' },
      to: {
        dependencyTypes: [
          'npm',
          'npm-dev',
          'npm-optional',
          'npm-peer',
          'npm-bundled',
          'npm-no-pkg',
        ],
        path: [
          // oidc-provider has no "exports" map: its entry is lib/index.js, everything below lib/ is private
          '^node_modules/oidc-provider/lib/[^/]+/',
          // any package's helpers or internals folder, wherever it sits in the package
          '^node_modules/.*/(helpers|internals?|private)/',
        ],
      },
    },
    {
      name: 'runtime-not-to-migrations',
      severity: 'error',
      comment:
        'A migration is history: only src/database/database.options.ts registers them (MIGRATIONS). Runtime code that needs an expression a migration uses shares a module with it (e.g. src/database/search-vectors.ts) instead of importing the migration.',
      from: { path: '^src/', pathNot: '^src/database/(database\\.options\\.ts|migrations/)' },
      to: { path: '^src/database/migrations/' },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      comment:
        'An import that does not resolve (a typo, or a package not installed) is a broken build.',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|coverage|\\.ci/out)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.test.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.d.ts', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
