// POST /v1/analytics/query: SQL goes to the sandbox as is; a question goes to the natural-language
// engine (language/), then, when a language model is configured, to the model filling the same
// query AST, and only then to SQL written by the model, which runs in the same sandbox.
import { parse } from 'libpg-query';
import type { ServiceContext } from '../context.js';
import { activeUsersSeries, compileQuery, describeQuery } from '../language/index.js';
import { analyticsSqlPrompt } from '../language/prompts.js';
import { languageContext, readQuestion, refusal } from '../language/service.js';
import { LlmError } from '../llm/index.js';
import { runOverRelations, runSandboxedQuery, type SandboxResult } from '../sandbox/sandbox.js';
import { rollupsAnswer } from './metrics.js';
import { activeUsersPerBucket } from './queries/rollup-metrics.js';

export type QueryMethod = 'rules' | 'llm' | 'llm_sql' | 'sql';

export interface QueryAnswer extends Omit<SandboxResult, 'sql'> {
  /** The SQL that ran; absent when the answer came from the activity rollup's daily rows. */
  sql?: string;
  method: QueryMethod;
  queryTimeMs: number;
  /** What was computed, over which period (one sentence). */
  interpretation: string;
  /** 1 for the built-in engine and caller SQL; the model's own confidence otherwise. */
  confidence: number;
}

/** True when the text is SQL rather than a question: it starts like a query or parses as SQL. */
export async function looksLikeSql(text: string): Promise<boolean> {
  if (/^\s*\(*\s*(select|with)\b/i.test(text)) return true;
  try {
    const parsed = await parse(text);
    return (parsed.stmts ?? []).length > 0;
  } catch {
    return false;
  }
}

const LLM_SQL_SCHEMA = {
  type: 'object',
  properties: {
    sql: {
      type: 'string',
      description: 'One PostgreSQL SELECT statement answering the question, or "" if impossible.',
    },
    explanation: { type: 'string', description: 'One sentence on what the query computes, over which period.' },
  },
  required: ['sql', 'explanation'],
  additionalProperties: false,
};

export async function answerQuery(
  ctx: ServiceContext,
  app: { id: string; organization_id?: string },
  query: string,
  /** `owner`: whose sandbox concurrency the query counts against (the API key). */
  extra: { owner?: string } = {},
): Promise<QueryAnswer> {
  const options = {
    timeoutMs: ctx.config.analyticsQueryTimeoutMs,
    owner: extra.owner,
    organizationId: app.organization_id,
  };
  const started = performance.now();
  const done = (
    result: Omit<SandboxResult, 'sql'> & { sql?: string },
    method: QueryMethod,
    interpretation: string,
    confidence = 1,
  ): QueryAnswer => ({
    ...result,
    method,
    interpretation,
    confidence,
    queryTimeMs: Math.max(0, Math.round(performance.now() - started)),
  });

  if (await looksLikeSql(query)) {
    return done(await runSandboxedQuery(ctx, app.id, query, options), 'sql', 'Your SQL, run in the sandbox.');
  }
  const lc = await languageContext(ctx, app.id);
  const read = await readQuestion(ctx, lc, query);
  if (read.method !== 'llm_sql') {
    const cx = { ...lc.compile, ...(await rollupsCanAnswer(ctx, app.id, lc.timeZone)) };
    let interpretation = describeQuery(read.ast, lc.clock);
    if (read.corrections.length > 0) {
      interpretation = `${interpretation.replace(/\.$/, '')} (reading ${read.corrections.map(([a, b]) => `"${a}" as "${b}"`).join(', ')}).`;
    }
    const series = activeUsersSeries(read.ast, cx);
    if (series) {
      // Distinct active users per day, week or month, counted as the metrics count them.
      const counts = await activeUsersPerBucket(ctx.db, app.id, {
        timeZone: lc.timeZone,
        unit: series.unit,
        lo: series.lo,
        hi: series.hi,
        timeoutMs: ctx.config.analyticsQueryTimeoutMs,
      });
      const rows = series.buckets.map((b) => ({ date: b.label, value: counts.get(b.key.slice(0, 16)) ?? 0 }));
      const note = `${interpretation.replace(/\.$/, '')} (read from the daily activity rollup, as the metrics are; no SQL ran).`;
      return done({ rows, truncated: false, columns: ['date', 'value'] }, read.method, note, read.confidence);
    }
    const compiled = compileQuery(read.ast, cx);
    const result = await runOverRelations(ctx, app.id, compiled.statement, compiled.params, options);
    return done({ ...result, sql: compiled.display }, read.method, interpretation, read.confidence);
  }
  // Last resort: SQL written by the model, in the sandbox.
  let answer: { sql?: unknown; explanation?: unknown };
  try {
    answer = await ctx.llm!.json<{ sql: string; explanation: string }>({
      system: analyticsSqlPrompt(lc),
      prompt: query,
      schemaName: 'analytics_sql',
      schema: LLM_SQL_SCHEMA,
    });
  } catch (err) {
    ctx.logger.warn(
      { err: err instanceof LlmError ? err.message : err },
      'language model failed on an analytics question',
    );
    throw refusal(lc, query, read.rulesError, 'question', ' The language model did not answer either.');
  }
  if (typeof answer?.sql !== 'string' || answer.sql.trim() === '') {
    throw refusal(lc, query, read.rulesError, 'question', ' The language model could not write a query for it either.');
  }
  const explanation =
    typeof answer.explanation === 'string' && answer.explanation.trim()
      ? answer.explanation.trim()
      : 'SQL written by the language model.';
  return done(await runSandboxedQuery(ctx, app.id, answer.sql, options), 'llm_sql', explanation.slice(0, 500), 0.5);
}

/**
 * Whether questions may read the app's activity rollup (ready in the organization's time zone) and
 * its per-event rollup (counted from the events before it), given that the sandbox reads them
 * (embedded mode; an unconfined PostgreSQL setup, where Tally's own statements run on Tally's pool;
 * or a sandbox role granted the rollups' tables).
 */
export async function rollupsCanAnswer(
  ctx: ServiceContext,
  appId: string,
  timeZone: string,
): Promise<{ rollup: boolean; eventRollup: boolean }> {
  const { rollup, eventRollup } = await rollupsAnswer(ctx, appId, timeZone);
  if (!rollup && !eventRollup) return { rollup, eventRollup };
  const executor = ctx.sandbox.executor;
  if (!executor.embedded) {
    const confinement = await executor.confinement();
    if (confinement.confined && confinement.readsRollup !== true) return { rollup: false, eventRollup: false };
  }
  return { rollup, eventRollup };
}

const FORMULA_START = /^[=+\-@\t\r]/;
const NUMERIC_TEXT = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;

/**
 * Rows as CSV: a header line, then one line per row (RFC 4180 quoting; objects as JSON). Text
 * that a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, tab or carriage
 * return) is prefixed with `'`; numbers, including numeric text such as PostgreSQL's `numeric`
 * values (`-12.50`), are left as they are.
 */
export function toCsv(columns: string[], rows: Record<string, unknown>[]): string {
  const cell = (v: unknown) => {
    if (v === null || v === undefined) return '';
    let s = typeof v === 'object' ? JSON.stringify(v) : String(v);
    if (typeof v === 'string' && FORMULA_START.test(s) && !NUMERIC_TEXT.test(s)) s = `'${s}`;
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  const lines = [columns.map(cell).join(','), ...rows.map((r) => columns.map((c) => cell(r[c])).join(','))];
  return `${lines.join('\r\n')}\r\n`;
}
