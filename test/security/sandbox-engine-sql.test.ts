// The language engine's SQL needs nothing the sandbox refuses (issue 25): every question of
// bench/nl-cases.json and every criteria of test/fixtures/audience-criteria.json, read on their
// seed-demo data with their fixed clock and compiled (server/src/language/queries/compile*.ts), gives
// SQL that the checker accepts as if a caller had sent it, values written in. None of it calls a
// function that can build a large value from small input.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'libpg-query';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotUnderstood, understandCriteria, understandQuestion } from '../../server/src/language/index.js';
import {
  type CompiledSql,
  compileQuery,
  compileSegmentCount,
  compileSegmentMembers,
} from '../../server/src/language/queries/compile.js';
import { languageContext } from '../../server/src/language/service.js';
import { checkSandboxSql } from '../../server/src/sandbox/check.js';
import { type DemoApp, startDemoApp } from '../helpers/demo-app.js';

const read = (file: string) => JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../..', file), 'utf8'));
const questions = read('bench/nl-cases.json');
const criteria = read('test/fixtures/audience-criteria.json');

/** Functions that build large values from small input: the engine must use none of them. */
const AMPLIFIERS = new Set(
  `replace repeat lpad rpad concat concat_ws string_agg array_agg json_agg jsonb_agg json_object_agg
  jsonb_object_agg array_fill format overlay translate jsonb_pretty regexp_replace string_to_array`.split(/\s+/),
);

function calledFunctions(tree: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(tree)) for (const t of tree) calledFunctions(t, out);
  else if (tree && typeof tree === 'object') {
    for (const [key, value] of Object.entries(tree)) {
      if (key === 'FuncCall') {
        const parts = (value as { funcname: { String: { sval: string } }[] }).funcname;
        out.add(parts[parts.length - 1]!.String.sval.toLowerCase());
      }
      calledFunctions(value, out);
    }
  }
  return out;
}

/**
 * A question that only counts users reads the events table by the users' own key (compile.ts,
 * EVENTS_BY_USER_KEY), a relation callers cannot name: checked with the sandbox's `events` in its
 * place, which has the same columns, so everything else in the statement is checked as caller SQL.
 */
const BY_USER_KEY =
  /\(select x\.id, x\.user_id, x\.event_name, x\.properties, x\.created_at from public\.events x\s+where x\.app_id = '[0-9a-f-]{36}'::uuid and not x\.is_bot\)/g;
const asCallerSql = (display: string) => display.replace(BY_USER_KEY, 'events');

let demo: DemoApp;
const compiled: { text: string; sql: CompiledSql }[] = [];

beforeAll(async () => {
  expect(criteria.seed).toEqual(questions.seed);
  demo = await startDemoApp(questions);
  const lc = await languageContext(demo.ctx, demo.appId);
  const understood = <T>(f: () => T): T | null => {
    try {
      return f();
    } catch (err) {
      if (err instanceof NotUnderstood) return null;
      throw err;
    }
  };
  for (const c of questions.cases as { question: string }[]) {
    const q = understood(() => understandQuestion(c.question, lc.lexicon, lc.clock));
    if (q) compiled.push({ text: c.question, sql: compileQuery(q.ast, lc.compile) });
  }
  for (const c of criteria.cases as { criteria: string }[]) {
    const w = understood(() => understandCriteria(c.criteria, lc.lexicon, lc.clock));
    if (!w) continue;
    compiled.push({ text: `${c.criteria} (count)`, sql: compileSegmentCount(w.ast, lc.compile) });
    compiled.push({ text: `${c.criteria} (members)`, sql: compileSegmentMembers(w.ast, lc.compile, 50, 0) });
  }
}, 120_000);
afterAll(() => demo?.close());

describe('the engine compiled SQL', () => {
  it('compiles most cases (so this test checks something)', () => {
    expect(compiled.length).toBeGreaterThan(300);
    // Some read events by the users' own key, and only that relation is put back as `events`.
    const byKey = compiled.filter(({ sql }) => sql.display.includes('from public.events x'));
    expect(byKey.length).toBeGreaterThan(0);
    for (const { sql } of byKey) expect(asCallerSql(sql.display)).not.toContain('public.');
  });

  it('passes the checker as caller SQL would, and calls no function that amplifies its input', async () => {
    const refused: string[] = [];
    const amplifying: string[] = [];
    for (const { text, sql } of compiled) {
      try {
        await checkSandboxSql(asCallerSql(sql.display), { embedded: false });
      } catch (err) {
        refused.push(`${text}: ${(err as Error).message}\n${sql.display}`);
      }
      const used = [...calledFunctions(await parse(sql.display))].filter((f) => AMPLIFIERS.has(f));
      if (used.length > 0) amplifying.push(`${text}: ${used.join(', ')}`);
    }
    expect(refused).toEqual([]);
    expect(amplifying).toEqual([]);
  }, 120_000);
});
