// ESLint flat config. `npm run lint` = `eslint src test bench`.
// TypeScript files get type-aware linting through the project service (nearest tsconfig.json, which
// must include every linted .ts file); plain .js/.mjs scripts (bench/) are linted without types.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

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
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },

  {
    rules: {
      // The four rules the project promises (STYLE.md, "Tooling").
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
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
    // `expect(mock.method).toHaveBeenCalled()` and friends are not unbound calls.
    files: ['test/**/*.ts', '**/*.spec.ts', '**/*.e2e-spec.ts'],
    rules: {
      '@typescript-eslint/unbound-method': 'off',
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
