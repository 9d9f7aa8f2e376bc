// The plan of questions as the sandbox runs them: each question compiled as `POST /v1/analytics/query`
// compiles it (the rollups when they can answer), then `EXPLAIN (ANALYZE, BUFFERS)` of the statement
// inside the sandbox's relations, with the sandbox's settings, as its role (row-level security
// included) when the database has one, in a transaction that is rolled back. For a benchmark
// database kept by `bench/analytics.ts` (BENCH_ANALYTICS_KEEP); the app is its 'Bench app', the
// clock the benchmark's. Questions the rollup answers without SQL print no plan.
//   DB=postgres://postgres@127.0.0.1:5432/tally_bench_10m npx tsx bench/explain-question.ts \
//     'unique users with a purchase per week' 'total revenue by country last month'
import { rollupsCanAnswer } from '../server/src/analytics/query.js';
import { loadConfig } from '../server/src/config.js';
import { compileQuery } from '../server/src/language/queries/compile.js';
import { activeUsersSeries } from '../server/src/language/queries/compile-rollup.js';
import { languageContext, readQuestion } from '../server/src/language/service.js';
import { createLogger } from '../server/src/logger.js';
import {
  appSettingStatement,
  NO_PARALLEL_WORKERS,
  PLAN_FOR_ALL_ROWS,
  wrapStatement,
} from '../server/src/sandbox/queries/executor.js';
import { sandboxRoleName } from '../server/src/sandbox/queries/role.js';
import { createTally } from '../server/src/tally.js';

const url = process.env.DB;
if (!url) throw new Error('DB=<PostgreSQL URL of a kept benchmark database> is required');
const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'warn' });
const tally = await createTally(config, {
  logger: createLogger('warn'),
  clock: () => new Date('2026-03-31T18:00:00Z'),
  jobs: () => false,
});
const ctx = tally.context;
const knex = tally.database.knex;
const app = await knex('apps').where({ name: 'Bench app' }).first();
const role = sandboxRoleName(new URL(url).pathname.slice(1));
const hasRole = (await knex('pg_roles').where({ rolname: role }).first()) !== undefined;
try {
  for (const question of process.argv.slice(2)) {
    const lc = await languageContext(ctx, app.id);
    const read = await readQuestion(ctx, lc, question);
    if (read.method === 'llm_sql')
      throw new Error(`"${question}" needs a language model; this tool plans what the rules read`);
    const cx = { ...lc.compile, ...(await rollupsCanAnswer(ctx, app.id, lc.timeZone)) };
    console.log(`-- ${question}`);
    if (activeUsersSeries(read.ast, cx)) {
      console.log('(the daily activity rollup answers, as the metrics do: no SQL)');
      continue;
    }
    const compiled = compileQuery(read.ast, cx);
    // knex reads `?` as a placeholder and `:name` as a named one: jsonb's `?` is escaped.
    const text = wrapStatement(compiled.statement)
      .replaceAll('?', '\\?')
      .replace(/\$(\d+)/g, (_, i) => `:p${i}`);
    const values = Object.fromEntries([app.id, ...compiled.params].map((v, i) => [`p${i + 1}`, v]));
    await knex
      .transaction(async (trx) => {
        await trx.raw(`${PLAN_FOR_ALL_ROWS}; ${NO_PARALLEL_WORKERS}`);
        if (hasRole) {
          await trx.raw(`set local role "${role}"`);
          await trx.raw(appSettingStatement(app.id));
          await trx.raw('set local search_path = pg_catalog');
        }
        const { rows } = await trx.raw(`explain (analyze, buffers) ${text}`, values);
        for (const row of rows) console.log(row['QUERY PLAN']);
        throw new Error('rollback');
      })
      .catch((err: Error) => {
        if (err.message !== 'rollback') throw err;
      });
  }
} finally {
  await tally.close();
}
