import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Slow files whose meaning does not depend on the database: they run once, in the PostgreSQL pass
 * (TEST_DATABASE_URL), and are left out of the embedded (PGlite) pass, each with its reason.
 * `PGLITE_ALL=1` runs them on PGlite too. What the embedded database itself must do (its sandbox
 * guards, the activity rollup, seed-demo) has tests of its own that run in both passes.
 */
export const POSTGRES_PASS_ONLY: Record<string, string> = {
  'nl-held-out*': 'the language engine scored on held-out cases: the meaning of a question, not the database',
  'nl-property': "the language engine's answers against a SQL writer of its own: meaning, not the database",
  'nl-meaning': 'words that change meaning change the answer: the language engine, not the database',
  'nl-compare': 'comparisons with the period before, against reference SQL: the language engine',
  'nl-sequences': "sequences ('A then B') against reference SQL: the language engine",
  'nl-time-parts': 'hours and weekdays in a time zone, against reference SQL: the language engine',
  'audiences-criteria': 'audience criteria against reference SQL: the language engine (audiences.test.ts runs on both)',
  'analytics-nl': 'bench/nl-cases.json against reference SQL: the language engine (seed-demo.test.ts runs on both)',
};

const embeddedPass = !process.env.TEST_DATABASE_URL && process.env.PGLITE_ALL !== '1';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'server/src/**/*.test.ts', 'sdk-web/test/**/*.test.ts'],
    exclude: [
      ...configDefaults.exclude,
      ...(embeddedPass ? Object.keys(POSTGRES_PASS_ONLY).map((name) => `test/e2e/${name}.test.ts`) : []),
    ],
    globalSetup: ['test/helpers/global-setup.ts'],
    env: { NODE_ENV: 'test', RATE_LIMITS: 'off' },
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
