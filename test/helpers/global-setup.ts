// Prepares one migrated database for the whole run: a PGlite template that every test file loads
// in memory (about 1 s instead of 6 s for a fresh initdb), or, with TEST_DATABASE_URL, one uniquely
// named PostgreSQL database shared by the run and dropped afterwards.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexModule from 'knex';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../../server/src/storage/db.js';

declare module 'vitest' {
  export interface ProvidedContext {
    database: { kind: 'pglite'; templatePath: string } | { kind: 'postgres'; url: string };
  }
}

export default async function setup(project: TestProject) {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (adminUrl) {
    const name = `tally_test_${Date.now()}_${randomBytes(3).toString('hex')}`;
    const admin = knexModule({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
    await admin.raw(`create database ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const db = await openDatabase({ databaseUrl: url.toString() });
    await db.close();
    project.provide('database', { kind: 'postgres', url: url.toString() });
    return async () => {
      await admin.raw(`drop database if exists ${name} with (force)`);
      await admin.destroy();
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-template-'));
  const db = await openDatabase({ dataDir: ':memory:' });
  const dump = await db.pglite!.dumpDataDir('gzip');
  await db.close();
  const templatePath = path.join(dir, 'template.tar.gz');
  fs.writeFileSync(templatePath, Buffer.from(await dump.arrayBuffer()));
  project.provide('database', { kind: 'pglite', templatePath });
  return () => fs.rmSync(dir, { recursive: true, force: true });
}
