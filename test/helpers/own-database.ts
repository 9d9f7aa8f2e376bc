// A database of a test file's own, for migration tests that roll a migration back and forth
// where no other test runs, and for a second file with campaign workers: a fresh PostgreSQL
// database next to the run's (dropped on close with the sandbox role a server may have made for
// it), or this file's own copy of the embedded template.
import { randomBytes } from 'node:crypto';
import knexModule from 'knex';
import { inject } from 'vitest';
import { sandboxRoleName } from '../../server/src/sandbox/queries/role.js';
import { type Database, openDatabase } from '../../server/src/storage/db.js';
import { openTestDatabase } from './server.js';

export async function openOwnDatabase(prefix: string): Promise<{ database: Database; close(): Promise<void> }> {
  const target = inject('database');
  if (target.kind !== 'postgres') {
    const database = await openTestDatabase();
    return { database, close: () => database.close() };
  }
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = knexModule({ client: 'pg', connection: target.url, pool: { min: 0, max: 1 } });
  await admin.raw(`create database ${name}`);
  const url = new URL(target.url);
  url.pathname = `/${name}`;
  const database = await openDatabase({ databaseUrl: url.toString() });
  return {
    database,
    async close() {
      await database.close();
      await admin.raw(`drop database if exists ${name} with (force)`);
      await admin.raw(`drop role if exists ${sandboxRoleName(name)}`);
      await admin.destroy();
    },
  };
}

/**
 * The named indexes of `events` that exist, each as its definition after `USING btree` (` INVALID`
 * added when PostgreSQL left it invalid): what a migration that indexes events anew leaves.
 */
export async function eventIndexes(db: Database['knex'], names: string[]): Promise<Record<string, string>> {
  const { rows } = await db.raw(
    `select i.indexname, i.indexdef, x.indisvalid from pg_indexes i
     join pg_class c on c.relname = i.indexname join pg_index x on x.indexrelid = c.oid
     where i.tablename = 'events' and i.indexname = any(?)`,
    [names],
  );
  return Object.fromEntries(
    rows.map((r: { indexname: string; indexdef: string; indisvalid: boolean }) => [
      r.indexname,
      `${r.indexdef.replace(/^.* USING btree /, '')}${r.indisvalid ? '' : ' INVALID'}`,
    ]),
  );
}
