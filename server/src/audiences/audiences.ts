// Audiences: criteria in natural language become a stored condition (the built-in engine,
// confidence 1.0, or the language model filling the same AST), or, as the last resort, SQL written
// by the model and run in the SQL sandbox. Audiences are dynamic: members are computed at read
// time through the sandbox executor, and stored counts older than a minute are refreshed when read.

import type { ServiceContext } from '../context.js';
import { AppError, NotFoundError } from '../errors.js';
import { isUuid, uuidv7 } from '../ids.js';
import {
  audienceSqlCount,
  audienceSqlMembers,
  compileSegmentCount,
  compileSegmentMembers,
  describeUsers,
  type Segment,
} from '../language/index.js';
import type { LanguageContext } from '../language/language-context.js';
import { audienceSqlPrompt } from '../language/prompts.js';
import { languageContext, readCriteria, refusal } from '../language/service.js';
import { LlmError } from '../llm/index.js';
import { runOverRelations, runSandboxedQuery } from '../sandbox/sandbox.js';
import type { Db } from '../storage/handle.js';
import {
  type AudienceRow,
  countAudiences,
  findAudience,
  insertAudience,
  listAudienceIds,
  listAudiences,
  type QueryMethod,
  updateAudienceCount,
} from './queries/audiences.js';

/** Stored counts older than this are recomputed when read. */
export const COUNT_MAX_AGE_MS = 60_000;
/** Generated SQL behind audiences may run this long (interface spec: 30 seconds). */
export const AUDIENCE_SQL_TIMEOUT_MS = 30_000;

export interface AudienceInput {
  name: string;
  description?: string;
  criteria: string;
}

export interface CreatedAudience {
  audience: AudienceRow;
  userCount: number;
  queryMethod: QueryMethod;
  confidence: number;
  /** What the criteria were understood as, in plain words, or null (model-written SQL). */
  understood: string | null;
}

export interface AudienceMember {
  user_id: string;
  email: string | null;
  phone: string | null;
  last_active: string | null;
}

const options = { timeoutMs: AUDIENCE_SQL_TIMEOUT_MS };

async function countSegment(ctx: ServiceContext, lc: LanguageContext, segment: Segment): Promise<number> {
  const compiled = compileSegmentCount(segment.where, lc.compile);
  const result = await runOverRelations(ctx, lc.appId, compiled.statement, compiled.params, { ...options, rowCap: 1 });
  return Number(result.rows[0]?.user_count ?? 0);
}

async function countSql(ctx: ServiceContext, appId: string, sql: string): Promise<number> {
  const result = await runSandboxedQuery(ctx, appId, audienceSqlCount(sql), { ...options, rowCap: 1 });
  return Number(result.rows[0]?.user_count ?? 0);
}

/** The current number of members of an audience (not stored). */
async function currentCount(ctx: ServiceContext, audience: AudienceRow): Promise<number> {
  if (audience.definition) return countSegment(ctx, await languageContext(ctx, audience.app_id), audience.definition);
  if (audience.sql) return countSql(ctx, audience.app_id, audience.sql);
  return 0;
}

const SQL_SCHEMA = {
  type: 'object',
  properties: {
    sql: { type: 'string', description: 'One PostgreSQL SELECT returning the column user_id, or "" if impossible.' },
    confidence: { type: 'number', description: 'How sure you are that the SQL matches the criteria, 0 to 1.' },
  },
  required: ['sql', 'confidence'],
  additionalProperties: false,
};

/** SQL written by the model for criteria, checked in the sandbox; returns the accepted statement. */
async function modelSql(
  ctx: ServiceContext,
  lc: LanguageContext,
  criteria: string,
  read: Awaited<ReturnType<typeof readCriteria>>,
) {
  if (read.method !== 'llm_sql') throw new Error('unreachable');
  let answer: { sql?: unknown; confidence?: unknown };
  try {
    answer = await ctx.llm!.json({
      system: audienceSqlPrompt(lc),
      prompt: criteria,
      schemaName: 'audience_sql',
      schema: SQL_SCHEMA,
    });
  } catch (err) {
    ctx.logger.warn(
      { err: err instanceof LlmError ? err.message : err },
      'the language model failed to write audience SQL',
    );
    throw refusal(
      lc,
      criteria,
      read.rulesError,
      'criteria',
      ' The language model could not be asked either; try again later.',
    );
  }
  const sql = typeof answer?.sql === 'string' ? answer.sql.trim() : '';
  const raw = typeof answer?.confidence === 'number' && Number.isFinite(answer.confidence) ? answer.confidence : 0;
  const confidence = Math.min(1, Math.max(0, raw));
  if (sql === '' || confidence === 0) {
    throw refusal(
      lc,
      criteria,
      read.rulesError,
      'criteria',
      ' The language model could not express them as a query over users and events either.',
    );
  }
  const checked = await runSandboxedQuery(ctx, lc.appId, sql, { ...options, rowCap: 1 });
  if (!checked.columns.includes('user_id')) {
    throw new AppError(
      400,
      'QUERY_REJECTED',
      `The SQL written for these criteria returns the columns ${checked.columns.join(', ') || '(none)'}, but an audience needs a user_id column.`,
    );
  }
  return { sql: checked.sql.trim().replace(/;+\s*$/, ''), confidence };
}

/**
 * An audience read from its criteria and counted, not stored yet: what a campaign shows before it
 * is confirmed (and creates with it), and what createAudience stores.
 */
export interface AudienceDraft {
  appId: string;
  input: AudienceInput;
  definition: Segment | null;
  sql: string | null;
  queryMethod: QueryMethod;
  confidence: number;
  userCount: number;
  understood: string | null;
}

/** Reads criteria (built-in engine first, then the language model when one is configured) and counts the users; stores nothing. */
export async function draftAudience(ctx: ServiceContext, appId: string, input: AudienceInput): Promise<AudienceDraft> {
  const lc = await languageContext(ctx, appId);
  const read = await readCriteria(ctx, lc, input.criteria);
  let definition: Segment | null = null;
  let sql: string | null = null;
  let confidence = read.confidence;
  let userCount: number;
  if (read.method === 'llm_sql') {
    const written = await modelSql(ctx, lc, input.criteria, read);
    sql = written.sql;
    confidence = written.confidence;
    userCount = await countSql(ctx, appId, sql);
  } else {
    definition = { version: 2, where: read.ast };
    userCount = await countSegment(ctx, lc, definition);
  }
  return {
    appId,
    input,
    definition,
    sql,
    queryMethod: read.method,
    confidence,
    userCount,
    understood: definition ? describeUsers(definition.where, lc.clock) : null,
  };
}

/** Stores a drafted audience (on `db`, which may be a transaction). */
export async function storeAudience(ctx: ServiceContext, db: Db, draft: AudienceDraft): Promise<CreatedAudience> {
  const now = ctx.clock();
  const audience = await insertAudience(db, {
    id: uuidv7(now.getTime()),
    app_id: draft.appId,
    name: draft.input.name,
    description: draft.input.description ?? null,
    criteria: draft.input.criteria,
    definition: draft.definition,
    sql: draft.sql,
    query_method: draft.queryMethod,
    confidence: draft.confidence,
    user_count: draft.userCount,
    created_at: now,
    updated_at: now,
    counted_at: now,
  });
  const { userCount, queryMethod, confidence, understood } = draft;
  return { audience, userCount, queryMethod, confidence, understood };
}

/** Creates an audience: built-in engine first, then the language model when one is configured. */
export async function createAudience(
  ctx: ServiceContext,
  appId: string,
  input: AudienceInput,
): Promise<CreatedAudience> {
  return storeAudience(ctx, ctx.db, await draftAudience(ctx, appId, input));
}

/** The stored count, recomputed first when it is older than a minute. */
async function refreshed(ctx: ServiceContext, audience: AudienceRow): Promise<AudienceRow> {
  const now = ctx.clock();
  if (now.getTime() - audience.counted_at.getTime() < COUNT_MAX_AGE_MS) return audience;
  try {
    const count = await currentCount(ctx, audience);
    return (await updateAudienceCount(ctx.db, audience.app_id, audience.id, count, now)) ?? audience;
  } catch (err) {
    // A query that stopped working (e.g. the sandbox refuses it now) keeps its last count.
    ctx.logger.warn({ err, audience_id: audience.id }, 'could not refresh an audience count');
    return audience;
  }
}

/** A page of the app's audiences, newest first, with counts refreshed when stale. */
export async function listAudiencesPage(
  ctx: ServiceContext,
  appId: string,
  page: { limit: number; offset: number },
): Promise<{ audiences: AudienceRow[]; total: number }> {
  const [rows, total] = await Promise.all([
    listAudiences(ctx.db, appId, page.limit, page.offset),
    countAudiences(ctx.db, appId),
  ]);
  const audiences: AudienceRow[] = [];
  for (const row of rows) audiences.push(await refreshed(ctx, row));
  return { audiences, total };
}

/** One audience of the app (count refreshed when stale); 404 when it does not exist. */
export async function getAudience(ctx: ServiceContext, appId: string, audienceId: string): Promise<AudienceRow> {
  const audience = await findAudienceOrThrow(ctx, appId, audienceId);
  return refreshed(ctx, audience);
}

async function findAudienceOrThrow(ctx: ServiceContext, appId: string, audienceId: string): Promise<AudienceRow> {
  const audience = isUuid(audienceId) ? await findAudience(ctx.db, appId, audienceId) : undefined;
  if (!audience) throw new NotFoundError(`No audience with id "${audienceId}" in this app.`);
  return audience;
}

const iso = (v: unknown): string | null =>
  v == null ? null : v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString();

/**
 * The audience's current members, one page at a time, in the order they were first seen, and how
 * many there are in all (also stored as the audience's count). Used by campaigns and the MCP
 * audience detail.
 */
export async function audienceMembers(
  ctx: ServiceContext,
  appId: string,
  audienceId: string,
  page: { limit: number; offset: number },
): Promise<{ users: AudienceMember[]; total: number }> {
  const audience = await findAudienceOrThrow(ctx, appId, audienceId);
  const limit = Math.max(0, Math.floor(page.limit));
  const offset = Math.max(0, Math.floor(page.offset));
  let rows: Record<string, unknown>[] = [];
  let total: number;
  if (audience.definition) {
    const lc = await languageContext(ctx, appId);
    total = await countSegment(ctx, lc, audience.definition);
    if (limit > 0) {
      const compiled = compileSegmentMembers(audience.definition.where, lc.compile, limit, offset);
      rows = (await runOverRelations(ctx, appId, compiled.statement, compiled.params, { ...options, rowCap: limit }))
        .rows;
    }
  } else if (audience.sql) {
    total = await countSql(ctx, appId, audience.sql);
    if (limit > 0)
      rows = (
        await runSandboxedQuery(ctx, appId, audienceSqlMembers(audience.sql, limit, offset), {
          ...options,
          rowCap: limit,
        })
      ).rows;
  } else {
    total = 0;
  }
  const users = rows.map((r) => ({
    user_id: String(r.user_id),
    email: (r.email as string | null) ?? null,
    phone: (r.phone as string | null) ?? null,
    last_active: iso(r.last_active),
  }));
  if (total !== Number(audience.user_count)) {
    await updateAudienceCount(ctx.db, appId, audience.id, total, ctx.clock());
  }
  return { users, total };
}

/**
 * Counts every audience of the app again now (after an erasure). One that cannot be counted keeps
 * the stale mark its erasure left, so the next read tries again.
 */
export async function recountAudiences(ctx: ServiceContext, appId: string): Promise<void> {
  for (const id of await listAudienceIds(ctx.db, appId)) {
    const audience = await findAudience(ctx.db, appId, id);
    if (!audience) continue;
    try {
      await updateAudienceCount(ctx.db, appId, id, await currentCount(ctx, audience), ctx.clock());
    } catch (err) {
      ctx.logger.warn({ err, audience_id: id }, 'could not recount an audience');
    }
  }
}
