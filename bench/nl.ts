// Natural-language engine benchmark: the engine's own work (reading the text into the AST and
// compiling it to SQL, without running the query) for every question of bench/nl-cases.json and
// every criteria of test/fixtures/audience-criteria.json, on the lexicon of seed-demo data (seed 1,
// 60 users, 60 days) in an embedded database. Goal: under 5 ms per text (not a gate).
//   npm run bench -- nl
import fs from 'node:fs';
import { loadConfig } from '../server/src/config.js';
import { uuidv7 } from '../server/src/ids.js';
import {
  type Clock,
  Lexicon,
  NotUnderstood,
  understandCriteria,
  understandQuestion,
} from '../server/src/language/index.js';
import { type CompileContext, compileQuery, compileSegmentCount } from '../server/src/language/queries/compile.js';
import { loadLexiconData } from '../server/src/language/queries/lexicon.js';
import { createLogger } from '../server/src/logger.js';
import { openDatabase } from '../server/src/storage/db.js';
import { insertApp, insertOrganization } from '../server/src/storage/tenancy.js';
import { createTally } from '../server/src/tally.js';
import { seedDemo } from '../server/src/tracking/demo.js';

const ROUNDS = Number(process.env.BENCH_RUNS ?? 20);

function percentile(sorted: number[], p: number): number {
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! * 1000) / 1000;
}

export async function benchNl() {
  const questions = (JSON.parse(fs.readFileSync('bench/nl-cases.json', 'utf8')).cases as { question: string }[]).map(
    (c) => c.question,
  );
  const criteria = (
    JSON.parse(fs.readFileSync('test/fixtures/audience-criteria.json', 'utf8')).cases as { criteria: string }[]
  ).map((c) => c.criteria);
  const database = await openDatabase({ dataDir: ':memory:' });
  let lexicon: Lexicon;
  const now = new Date('2026-03-31T23:00:00Z');
  const config = loadConfig({ LOG_LEVEL: 'warn', DATA_DIR: '/nonexistent-bench' });
  const tally = await createTally(config, { logger: createLogger('warn'), database, clock: () => now });
  try {
    const ctx = tally.context;
    const org = await insertOrganization(database.knex, { id: uuidv7(), name: 'Bench org' });
    const app = await insertApp(database.knex, { id: uuidv7(), organization_id: org.id, name: 'Bench app' });
    await seedDemo(ctx, app.id, { users: 60, days: 60, seed: 1, end_date: '2026-03-31' });
    await ctx.ingestor.idle();
    const t = performance.now();
    const data = await loadLexiconData(database.knex, app.id);
    const loadMs = performance.now() - t;
    const t2 = performance.now();
    lexicon = new Lexicon(data);
    const buildMs = performance.now() - t2;
    const clock: Clock = { today: '2026-03-31', now };
    const cx: CompileContext = {
      now,
      timeZone: 'UTC',
      today: '2026-03-31',
      moneyKey: lexicon.moneyKey,
      conversionEvents: [],
      firstSeen: () => '2026-01-31T18:00:00.000Z',
    };
    const times: number[] = [];
    const best = new Map<string, number>();
    const run = (text: string, kind: 'q' | 'c') => {
      const s = performance.now();
      try {
        if (kind === 'q') compileQuery(understandQuestion(text, lexicon, clock).ast, cx);
        else compileSegmentCount(understandCriteria(text, lexicon, clock).ast, cx);
      } catch (err) {
        if (!(err instanceof NotUnderstood)) throw err;
      }
      const took = performance.now() - s;
      best.set(text, Math.min(best.get(text) ?? Number.POSITIVE_INFINITY, took));
      return took;
    };
    // warm up, then measure every text ROUNDS times
    for (const q of questions) run(q, 'q');
    for (const c of criteria) run(c, 'c');
    best.clear();
    for (let r = 0; r < ROUNDS; r++) {
      for (const q of questions) times.push(run(q, 'q'));
      for (const c of criteria) times.push(run(c, 'c'));
    }
    times.sort((a, b) => a - b);
    return {
      bench: 'nl',
      texts: questions.length + criteria.length,
      rounds: ROUNDS,
      lexicon_load_ms: Math.round(loadMs),
      lexicon_build_ms: Math.round(buildMs),
      parse_and_compile_ms: {
        median: percentile(times, 0.5),
        p95: percentile(times, 0.95),
        p99: percentile(times, 0.99),
        max: percentile(times, 1),
      },
      // each text's fastest run, then the slowest text: the engine's own cost without pauses
      slowest_text_ms: Math.round(Math.max(...best.values()) * 1000) / 1000,
      runs_over_5_ms: times.filter((t) => t > 5).length,
      runs: times.length,
    };
  } finally {
    await tally.close();
    await database.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await benchNl()));
