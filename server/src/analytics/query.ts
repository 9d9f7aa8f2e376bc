// POST /v1/analytics/query: SQL goes to the sandbox as is; a question goes to the built-in engine
// first, then (when an LLM is configured) to the model, whose SQL runs in the same sandbox.
import { parse } from 'libpg-query';
import { AppError } from '../errors.js';
import { LlmError } from '../llm/index.js';
import type { ServiceContext } from '../services/context.js';
import { compileQuestion, loadLexicon, NL_EXAMPLES } from './nl/index.js';
import { runOverRelations, runSandboxedQuery, type SandboxResult } from './sandbox.js';
import { localDate } from './time.js';

export type QueryMethod = 'rules' | 'llm_sql' | 'sql';

export interface QueryAnswer extends SandboxResult {
  method: QueryMethod;
  queryTimeMs: number;
}

export class QueryNotUnderstoodError extends AppError {
  constructor(message: string) {
    super(400, 'QUERY_NOT_UNDERSTOOD', message, { examples: NL_EXAMPLES });
  }
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

const LLM_SCHEMA = {
  type: 'object',
  properties: {
    sql: { type: 'string', description: 'One PostgreSQL SELECT statement answering the question.' },
    explanation: { type: 'string', description: 'One sentence on what the query computes.' },
  },
  required: ['sql', 'explanation'],
  additionalProperties: false,
};

function llmSystemPrompt(timeZone: string, today: string, lexicon: { events: string[]; properties: string[] }) {
  return [
    'You translate analytics questions into one PostgreSQL SELECT statement.',
    'Only two relations exist, already restricted to the app:',
    '  events(id uuid, user_id text, event_name text, properties jsonb, created_at timestamptz)',
    '  users(id uuid, user_id text, email text, phone text, properties jsonb, origin jsonb, created_at timestamptz, last_active timestamptz, event_count bigint)',
    'events.user_id and users.user_id are the same identifier. Do not qualify names with a schema.',
    'Use only common functions (count, sum, avg, min, max, date_trunc, to_char, coalesce, jsonb operators).',
    `The organization's time zone is ${timeZone}; today is ${today} there. Use created_at AT TIME ZONE '${timeZone}' for days.`,
    `Event names: ${lexicon.events.slice(0, 100).join(', ') || '(none yet)'}.`,
    `Event property keys: ${lexicon.properties.slice(0, 100).join(', ') || '(none yet)'}.`,
  ].join('\n');
}

export async function answerQuery(
  ctx: ServiceContext,
  app: { id: string },
  timeZone: string,
  query: string,
  /** `owner`: whose sandbox concurrency the query counts against (the API key). */
  extra: { owner?: string } = {},
): Promise<QueryAnswer> {
  const options = { timeoutMs: ctx.config.analyticsQueryTimeoutMs, owner: extra.owner };
  const started = performance.now();
  const done = (result: SandboxResult, method: QueryMethod): QueryAnswer => ({
    ...result,
    method,
    queryTimeMs: Math.max(0, Math.round(performance.now() - started)),
  });

  if (await looksLikeSql(query)) return done(await runSandboxedQuery(ctx, app.id, query, options), 'sql');

  const now = ctx.clock();
  const lexicon = await loadLexicon(ctx.db, app.id);
  const compiled = compileQuestion(query, lexicon, timeZone, now);
  if (compiled) {
    const result = await runOverRelations(ctx, app.id, compiled.statement, compiled.params, options);
    return done({ ...result, sql: compiled.display }, 'rules');
  }
  if (!ctx.llm) {
    throw new QueryNotUnderstoodError(
      'The built-in engine does not understand that question, and no language model is configured. Rephrase it like one of the examples, or send SQL.',
    );
  }
  let answer: { sql?: unknown };
  try {
    answer = await ctx.llm.json<{ sql: string; explanation: string }>({
      system: llmSystemPrompt(timeZone, localDate(now, timeZone), lexicon),
      prompt: query,
      schemaName: 'analytics_sql',
      schema: LLM_SCHEMA,
    });
  } catch (err) {
    ctx.logger.warn(
      { err: err instanceof LlmError ? err.message : err },
      'language model failed on an analytics question',
    );
    throw new QueryNotUnderstoodError(
      'The built-in engine does not understand that question, and the language model did not answer. Rephrase it like one of the examples, or send SQL.',
    );
  }
  if (typeof answer?.sql !== 'string' || answer.sql.trim() === '') {
    throw new QueryNotUnderstoodError('The language model did not produce a query for that question.');
  }
  return done(await runSandboxedQuery(ctx, app.id, answer.sql, options), 'llm_sql');
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
