// Audience conditions compiled to statements over the sandbox relation `users`: the count and a
// page of members of a segment, and the same over a model-written audience SELECT.
import type { Condition } from '../ast.js';
import { type CompileContext, type CompiledSql, Sql } from './compile-parts.js';

const strip = (sql: string) => sql.trim().replace(/;+\s*$/, '');

/** Counts the distinct users a model-written audience SELECT returns (run in the sandbox). */
export function audienceSqlCount(sql: string): string {
  return `select count(distinct audience.user_id) as user_count from (\n${strip(sql)}\n) as audience`;
}

/** One page of the users a model-written audience SELECT returns, in the order first seen. */
export function audienceSqlMembers(sql: string, limit: number, offset: number): string {
  return `select u.user_id, u.email, u.phone, u.last_active from users u
where u.user_id in (select audience.user_id from (\n${strip(sql)}\n) as audience)
order by u.created_at, u.id limit ${Math.floor(limit)} offset ${Math.floor(offset)}`;
}

// ---- segments -----------------------------------------------------------------------------------

export function compileSegmentCount(where: Condition, cx: CompileContext): CompiledSql {
  const sql = new Sql(cx);
  const statement = `select count(*) as user_count from users u where ${sql.condition(where)}`;
  return { statement, params: sql.params, display: sql.display(statement) };
}

export function compileSegmentMembers(
  where: Condition,
  cx: CompileContext,
  limit: number,
  offset: number,
): CompiledSql {
  const sql = new Sql(cx);
  const statement = `select u.user_id, u.email, u.phone, u.last_active from users u where ${sql.condition(where)}
order by u.created_at, u.id limit ${sql.p(limit, 'bigint')} offset ${sql.p(offset, 'bigint')}`;
  return { statement, params: sql.params, display: sql.display(statement) };
}
