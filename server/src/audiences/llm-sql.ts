// The language-model path for criteria the rules engine does not understand: the model writes one
// SELECT over the sandbox's relations returning `user_id` values, and everything it wrote runs only
// inside the SQL sandbox (checked by the PostgreSQL parser, read-only, 30-second timeout).
import { runSandboxedQuery } from '../analytics/sandbox.js';
import { AppError } from '../errors.js';
import type { Llm } from '../llm/index.js';
import type { ServiceContext } from '../services/context.js';

/** Generated SQL behind audiences may run this long (interface spec: 30 seconds). */
export const AUDIENCE_SQL_TIMEOUT_MS = 30_000;

export interface LlmSqlAnswer {
  /** One SELECT returning a `user_id` column, or "" when the criteria cannot be expressed. */
  sql: string;
  /** 0 to 1. */
  confidence: number;
}

const SCHEMA = {
  type: 'object',
  properties: {
    sql: { type: 'string', description: 'One PostgreSQL SELECT returning the column user_id, or "" if impossible.' },
    confidence: { type: 'number', description: 'How sure you are that the SQL matches the criteria, 0 to 1.' },
  },
  required: ['sql', 'confidence'],
  additionalProperties: false,
};

function systemPrompt(knownEvents: readonly string[], now: Date): string {
  const events = knownEvents.length ? knownEvents.slice(0, 200).join(', ') : '(none tracked yet)';
  return [
    'You turn a description of a group of users into one PostgreSQL SELECT statement.',
    'Only these two relations exist (already limited to one app; bot traffic is excluded):',
    '  users(id, user_id, email, phone, properties jsonb, origin jsonb, created_at, last_active, event_count)',
    '  events(id, user_id, event_name, properties jsonb, created_at)',
    'user_id is the user identifier in both relations (join on it). users.created_at is when the user was first seen;',
    'events.created_at is when the event happened. Read properties with ->> (text) or -> (jsonb).',
    'The statement must return a column named user_id, one row per matching user. Write literal values',
    '(no $1 parameters), no schema names, no other tables, no data changes, no regular expressions,',
    'no generate_series; join with JOIN ... ON, never a comma-separated FROM.',
    `The current time is ${now.toISOString()}. Event names tracked by this app: ${events}.`,
    'If the description cannot be expressed with these relations, answer sql "" and confidence 0.',
  ].join('\n');
}

/** Asks the model for SQL; throws LlmError-derived errors when the model fails. */
export async function writeAudienceSql(
  llm: Llm,
  criteria: string,
  knownEvents: readonly string[],
  now: Date,
): Promise<LlmSqlAnswer> {
  const answer = await llm.json<Partial<LlmSqlAnswer>>({
    system: systemPrompt(knownEvents, now),
    prompt: criteria,
    schemaName: 'audience_sql',
    schema: SCHEMA,
  });
  const sql = typeof answer?.sql === 'string' ? answer.sql.trim() : '';
  const raw = typeof answer?.confidence === 'number' && Number.isFinite(answer.confidence) ? answer.confidence : 0;
  return { sql, confidence: Math.min(1, Math.max(0, raw)) };
}

const strip = (sql: string) => sql.trim().replace(/;+\s*$/, '');

/**
 * Checks SQL in the sandbox: it must run and return a `user_id` column. Returns the statement as
 * the sandbox accepted it. QUERY_REJECTED / QUERY_TIMEOUT (400) otherwise.
 */
export async function checkAudienceSql(ctx: ServiceContext, appId: string, sql: string): Promise<string> {
  const result = await runSandboxedQuery(ctx, appId, sql, { timeoutMs: AUDIENCE_SQL_TIMEOUT_MS, rowCap: 1 });
  if (!result.columns.includes('user_id')) {
    throw new AppError(
      400,
      'QUERY_REJECTED',
      `The SQL written for these criteria returns the columns ${result.columns.join(', ') || '(none)'}, but an audience needs a user_id column.`,
    );
  }
  return strip(result.sql);
}

/** The number of distinct users the SQL selects. */
export async function countSqlAudience(ctx: ServiceContext, appId: string, sql: string): Promise<number> {
  const wrapped = `select count(distinct audience.user_id) as user_count from (\n${strip(sql)}\n) as audience`;
  const result = await runSandboxedQuery(ctx, appId, wrapped, { timeoutMs: AUDIENCE_SQL_TIMEOUT_MS, rowCap: 1 });
  return Number(result.rows[0]?.user_count ?? 0);
}

export interface SqlMember {
  user_id: string;
  email: string | null;
  phone: string | null;
  last_active: string | null;
}

/** One page of the users the SQL selects, in the order users were first seen. */
export async function sqlAudienceMembers(
  ctx: ServiceContext,
  appId: string,
  sql: string,
  limit: number,
  offset: number,
): Promise<SqlMember[]> {
  const wrapped = `select u.user_id, u.email, u.phone, u.last_active from users u
where u.user_id in (select audience.user_id from (\n${strip(sql)}\n) as audience)
order by u.created_at, u.id limit ${Math.floor(limit)} offset ${Math.floor(offset)}`;
  const result = await runSandboxedQuery(ctx, appId, wrapped, { timeoutMs: AUDIENCE_SQL_TIMEOUT_MS, rowCap: limit });
  // Timestamps come back as text or as Date depending on the driver: answer ISO 8601 text.
  return result.rows.map((r) => ({
    user_id: String(r.user_id),
    email: (r.email as string | null) ?? null,
    phone: (r.phone as string | null) ?? null,
    last_active:
      r.last_active == null
        ? null
        : r.last_active instanceof Date
          ? r.last_active.toISOString()
          : new Date(String(r.last_active)).toISOString(),
  }));
}
