// Audiences: criteria in natural language become a stored segment definition (built-in rules
// engine, confidence 1.0) or, when that engine does not understand them and a language model is
// configured, SQL written by the model and run in the SQL sandbox. Audiences are dynamic: members
// are computed at read time, and stored counts older than a minute are refreshed when read.
import { describe, EXAMPLES, type SegmentDefinition } from '../audiences/ast.js';
import { type CompileContext, compileCondition } from '../audiences/compile.js';
import { checkAudienceSql, countSqlAudience, sqlAudienceMembers, writeAudienceSql } from '../audiences/llm-sql.js';
import { CriteriaError, parseCriteria } from '../audiences/parser.js';
import { AppError, NotFoundError } from '../errors.js';
import { isUuid, uuidv7 } from '../ids.js';
import {
  type AudienceRow,
  appTimeZone,
  countAudiences,
  countMatchingUsers,
  findAudience,
  insertAudience,
  knownEventNames,
  listAudiences,
  listMatchingUsers,
  type QueryMethod,
  updateAudienceCount,
} from '../storage/audiences.js';
import type { ServiceContext } from './context.js';

/** Stored counts older than this are recomputed when read. */
export const COUNT_MAX_AGE_MS = 60_000;

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
  /** What the criteria were understood as, in plain words (rules), or null (SQL). */
  understood: string | null;
}

export interface AudienceMember {
  user_id: string;
  email: string | null;
  phone: string | null;
  last_active: string | null;
}

export class QueryNotUnderstoodError extends AppError {
  constructor(message: string, details: { reason: string; near?: string }) {
    super(400, 'QUERY_NOT_UNDERSTOOD', message, { examples: [...EXAMPLES], ...details });
  }
}

async function compileContext(ctx: ServiceContext, appId: string): Promise<CompileContext> {
  return { now: ctx.clock(), timeZone: await appTimeZone(ctx.db, appId) };
}

async function countDefinition(ctx: ServiceContext, appId: string, definition: SegmentDefinition): Promise<number> {
  const where = compileCondition(definition.where, await compileContext(ctx, appId));
  return countMatchingUsers(ctx.db, appId, where);
}

/** The current number of members of an audience (not stored). */
async function currentCount(ctx: ServiceContext, audience: AudienceRow): Promise<number> {
  if (audience.definition) return countDefinition(ctx, audience.app_id, audience.definition);
  if (audience.sql) return countSqlAudience(ctx, audience.app_id, audience.sql);
  return 0;
}

/** Creates an audience: rules engine first, then the language model when one is configured. */
export async function createAudience(
  ctx: ServiceContext,
  appId: string,
  input: AudienceInput,
): Promise<CreatedAudience> {
  const knownEvents = await knownEventNames(ctx.db, appId);
  let definition: SegmentDefinition | null = null;
  let sql: string | null = null;
  let queryMethod: QueryMethod = 'rules';
  let confidence = 1;
  let userCount: number;
  try {
    definition = parseCriteria(input.criteria, { knownEvents });
  } catch (err) {
    if (!(err instanceof CriteriaError)) throw err;
    const notUnderstood = (why: string) =>
      new QueryNotUnderstoodError(
        `Tally did not understand the criteria "${input.criteria}": ${err.message}${why} Write them like one of the examples.`,
        { reason: err.message, ...(err.near ? { near: err.near } : {}) },
      );
    if (!ctx.llm) throw notUnderstood('');
    let answer: Awaited<ReturnType<typeof writeAudienceSql>>;
    try {
      answer = await writeAudienceSql(ctx.llm, input.criteria, knownEvents, ctx.clock());
    } catch (llmErr) {
      ctx.logger.warn({ err: llmErr }, 'the language model failed to write audience SQL');
      throw notUnderstood(' The language model could not be asked either; try again later.');
    }
    if (answer.sql === '' || answer.confidence === 0) {
      throw notUnderstood(' The language model could not express them as a query over users and events either.');
    }
    sql = await checkAudienceSql(ctx, appId, answer.sql);
    queryMethod = 'llm_sql';
    confidence = answer.confidence;
  }
  if (definition) userCount = await countDefinition(ctx, appId, definition);
  else userCount = await countSqlAudience(ctx, appId, sql!);
  const now = ctx.clock();
  const audience = await insertAudience(ctx.db, {
    id: uuidv7(now.getTime()),
    app_id: appId,
    name: input.name,
    description: input.description ?? null,
    criteria: input.criteria,
    definition,
    sql,
    query_method: queryMethod,
    confidence,
    user_count: userCount,
    created_at: now,
    updated_at: now,
    counted_at: now,
  });
  return {
    audience,
    userCount,
    queryMethod,
    confidence,
    understood: definition ? describe(definition.where) : null,
  };
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
  let users: AudienceMember[];
  let total: number;
  if (audience.definition) {
    const where = compileCondition(audience.definition.where, await compileContext(ctx, appId));
    total = await countMatchingUsers(ctx.db, appId, where);
    const rows = limit === 0 ? [] : await listMatchingUsers(ctx.db, appId, where, limit, offset);
    users = rows.map((r) => ({
      user_id: r.user_id,
      email: r.email,
      phone: r.phone,
      last_active: r.last_active ? r.last_active.toISOString() : null,
    }));
  } else if (audience.sql) {
    total = await countSqlAudience(ctx, appId, audience.sql);
    users = limit === 0 ? [] : await sqlAudienceMembers(ctx, appId, audience.sql, limit, offset);
  } else {
    total = 0;
    users = [];
  }
  if (total !== Number(audience.user_count)) {
    await updateAudienceCount(ctx.db, appId, audience.id, total, ctx.clock());
  }
  return { users, total };
}
