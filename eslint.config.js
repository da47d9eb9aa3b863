// ESLint over src, test, bench, scripts and examples with typescript-eslint's type-checked rules (types from the
// project service, i.e. the tsconfig.json that holds each file). eslint-config-prettier comes last,
// so no rule here argues with the formatter; `npm run lint` runs eslint, prettier --check and knip.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['dist/', 'coverage/', '.tap/', 'node_modules/', 'test/output/', 'bench/profiles/', 'helm/', 'docs/']),
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `const { dropped, ...rest } = value` is how a field is left out of a copy.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
      // Fastify plugins and hooks, and tap subtests, pick their completion style by being async (a plain function must call
      // done() or t.end()), so an async function without await is how they are written here.
      '@typescript-eslint/require-await': 'off',
      // A `let` a teardown closure reads before its one assignment (set up, then started) is not a `const`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Type-only imports as `import type`, so the emitted JS never loads a module only for its types.
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // Tests read parsed JSON, YAML and XML bodies and assert them with tap: `Json` (test/support/http.ts) is `any` on purpose.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // tap queues and awaits every subtest itself: `t.test(…)` left unawaited is its documented use, not a lost promise.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafePromises: [{ from: 'package', package: '@tapjs/core', name: 'PromiseWithSubtest' }] },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ignores: ['public/**'],
    extends: [js.configs.recommended],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  {
    // The debug page's script, served as it is to the browser (a module, no build step). Agent text is untrusted:
    // the page writes data with textContent only, so the ways to write HTML or run strings are errors here.
    files: ['public/**/*.js'],
    extends: [js.configs.recommended],
    languageOptions: {
      sourceType: 'module',
      globals: { window: 'readonly', document: 'readonly', fetch: 'readonly', setTimeout: 'readonly', Element: 'readonly' },
    },
    rules: {
      'no-eval': 'error',
      'no-implied-eval': 'error',
      'no-new-func': 'error',
      'no-restricted-properties': [
        'error',
        ...['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'srcdoc'].map((property) => ({
          property,
          message: 'Write data with textContent.',
        })),
        ...['write', 'writeln'].map((property) => ({ object: 'document', property, message: 'Write data with textContent.' })),
      ],
    },
  },
  {
    // scripts/node24.cjs: CommonJS, run by whatever Node the machine has.
    files: ['**/*.cjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'commonjs', globals: { process: 'readonly', require: 'readonly', __dirname: 'readonly' } },
  },
  prettier,
  {
    // After eslint-config-prettier, which turns it off: Prettier wraps code at 140 columns but not strings,
    // comments or template literals. A regex is kept whole.
    rules: { 'max-len': ['error', { code: 140, tabWidth: 2, ignoreRegExpLiterals: true, ignoreUrls: true }] },
  },
  {
    // Generated from openapi.yaml (`npm run generate:types`): its comments are the components' descriptions, as long as they are.
    files: ['src/api/report-shapes.ts'],
    rules: { 'max-len': 'off' },
  },
);
