// ESLint flat config. `npm run lint` = `eslint src test bench`.
// TypeScript files get type-aware linting from tsconfig.test.json (the program that holds src, test
// and bench; tsconfig.json covers src only), or from the project service when that file is absent.
// Plain .js/.mjs scripts (bench/) are linted without type information.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import tseslint from 'typescript-eslint';
import { noDirectSideEffects } from './scripts/eslint/no-direct-side-effects.mjs';

const lintTsconfig = join(import.meta.dirname, 'tsconfig.test.json');
const typedParserOptions = existsSync(lintTsconfig)
  ? { project: lintTsconfig, tsconfigRootDir: import.meta.dirname }
  : { projectService: true, tsconfigRootDir: import.meta.dirname };

// Node.js globals for the plain-JS scripts (kept inline: `globals` is not a direct dependency).
const nodeGlobals = Object.fromEntries(
  [
    'AbortController',
    'AbortSignal',
    'Buffer',
    'URL',
    'URLSearchParams',
    'TextDecoder',
    'TextEncoder',
    'Headers',
    'Request',
    'Response',
    'fetch',
    'FormData',
    'console',
    'process',
    'queueMicrotask',
    'structuredClone',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'clearImmediate',
    'performance',
    'globalThis',
  ].map((name) => [name, 'readonly']),
);

export default defineConfig(
  globalIgnores(['dist/', 'node_modules/', 'data/', 'coverage/', '.ci/out/']),

  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: typedParserOptions,
    },
  },

  {
    rules: {
      // The four rules the project promises (CONTRIBUTING.md, "Tooling").
      '@typescript-eslint/no-floating-promises': 'error',
      // A switch without `default` must name every member of a union/enum; writing `default`
      // (e.g. over a plain string) is the explicit opt-out.
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      eqeqeq: 'error',
      curly: 'error',

      // NestJS style: modules are empty decorated classes, DTOs/guards touch untyped libraries.
      '@typescript-eslint/no-extraneous-class': 'off',
      '@typescript-eslint/no-explicit-any': 'warn',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Nest interfaces (canActivate, resolvers, strategies' validate) are often async by contract.
      '@typescript-eslint/require-await': 'off',
      'no-unused-vars': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
    },
  },

  {
    // What .dependency-cruiser.cjs cannot see (it reads import specifiers it can resolve): a computed
    // `import(variable)` and a deep import of a package's private files by name. The reach-ins the
    // app needs are isolated in src/common/library-internals.ts.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ImportExpression[source.type!="Literal"]',
          message:
            'No computed import(): name the module, so that the dependency rules (npm run lint:deps) see it.',
        },
      ],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(@[^/]+/)?[^./@][^/]*/(lib|src|internals?|helpers|private)/',
              message:
                "A package's private files move without notice: use its public entry points, or src/common/library-internals.ts.",
            },
          ],
        },
      ],
    },
  },

  {
    // A write records what changed on the change record; only its subscribers call the webhook
    // outbox, the audit log's write side, CountersRepository.add and the event bus's publish
    // (docs/data-integrity.md, "The change record"). The subscribers and the classes themselves are
    // exempt; the audit log counts its own entries and its purge.
    files: ['src/**/*.ts'],
    ignores: [
      'src/change-subscribers/**',
      'src/audit/audit.service.ts',
      'src/outbox/**',
      'src/events/**',
      'src/database/counters.repository.ts',
      '**/*.spec.ts',
    ],
    plugins: { atrium: { rules: { 'no-direct-side-effects': noDirectSideEffects } } },
    rules: { 'atrium/no-direct-side-effects': 'error' },
  },

  {
    // `expect(mock.method).toHaveBeenCalled()` and friends are not unbound calls.
    files: ['test/**/*.ts', '**/*.spec.ts', '**/*.e2e-spec.ts'],
    rules: {
      '@typescript-eslint/unbound-method': 'off',
      // response bodies in black-box tests are parsed JSON: `any` is their honest type
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },

  {
    // Plain Node scripts: no type information (they are in no tsconfig), Node globals.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      globals: nodeGlobals,
    },
  },
);
