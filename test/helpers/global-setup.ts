// Prepares one migrated database for the whole run: an embedded data directory that every test file
// copies and opens (about 1 s instead of 6 s for a fresh initdb), or, with TEST_DATABASE_URL, one
// uniquely named PostgreSQL database shared by the run and dropped afterwards with its sandbox role.
// TEST_DATABASE_REUSE=1 uses the database TEST_DATABASE_URL names as it is (for a role that may not
// create databases: CI's non-superuser pass).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexModule from 'knex';
import type { TestProject } from 'vitest/node';
import { JobRunner } from '../../server/src/jobs/runner.js';
import { createLogger } from '../../server/src/logger.js';
import { sandboxExecutor } from '../../server/src/sandbox/open.js';
import { sandboxRoleName } from '../../server/src/sandbox/queries/role.js';
import { type Database, openDatabase } from '../../server/src/storage/db.js';
import { startContractRun } from './contract-coverage.js';
import { prismWanted, startPrismRun } from './prism.js';

declare module 'vitest' {
  export interface ProvidedContext {
    database: { kind: 'pglite'; templateDir: string } | { kind: 'postgres'; url: string };
    /** Where test servers record the answers they give (contract-observer.ts). */
    contractRun: string;
    /** The run's Prism (TEST_PRISM=1, prism.ts), which test servers are reached through; else null. */
    prism: string | null;
  }
}

export default async function setup(project: TestProject) {
  const contract = startContractRun(project);
  const prism = prismWanted() ? await startPrismRun() : null;
  project.provide('prism', prism?.url ?? null);
  const database = await setUpDatabase(project);
  return async () => {
    await database?.();
    await prism?.close();
    await contract.finish();
  };
}

async function setUpDatabase(project: TestProject): Promise<(() => unknown) | undefined> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (adminUrl && process.env.TEST_DATABASE_REUSE === '1') {
    const db = await openDatabase({ databaseUrl: adminUrl });
    await prepare(db);
    await db.close();
    project.provide('database', { kind: 'postgres', url: adminUrl });
    return undefined;
  }
  if (adminUrl) {
    const name = `tally_test_${Date.now()}_${randomBytes(3).toString('hex')}`;
    const admin = knexModule({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
    await admin.raw(`create database ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const db = await openDatabase({ databaseUrl: url.toString() });
    await prepare(db);
    await db.close();
    project.provide('database', { kind: 'postgres', url: url.toString() });
    return async () => {
      await admin.raw(`drop database if exists ${name} with (force)`);
      await admin.raw(`drop role if exists ${sandboxRoleName(name)}`);
      await admin.destroy();
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-template-'));
  const db = await openDatabase({ dataDir: dir });
  await prepare(db);
  await db.close();
  project.provide('database', { kind: 'pglite', templateDir: dir });
  return () => fs.rmSync(dir, { recursive: true, force: true });
}

/** What every server does at its first start, done once before test files start servers together. */
async function prepare(db: Database): Promise<void> {
  const sandbox = sandboxExecutor(db);
  await sandbox.confinement(); // the sandbox role (PostgreSQL)
  await sandbox.close();
  const jobs = new JobRunner(db, createLogger('silent'));
  await jobs.start([]); // the job queue's schema
  await jobs.stop();
}
