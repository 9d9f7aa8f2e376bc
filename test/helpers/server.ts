// Starts Tally on a free port against this run's database, and creates tenants (organization,
// app, REST and MCP keys) directly in storage. Every response is validated strictly against the
// contract because NODE_ENV=test.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTallyClient, type TallyClient } from '@tally/client';
import type { DestinationStream } from 'pino';
import { expect, inject } from 'vitest';
import { createKey, type Permission } from '../../server/src/admin/keys.js';
import { type Config, loadConfig } from '../../server/src/config.js';
import { uuidv7 } from '../../server/src/ids.js';
import type { JobRunner } from '../../server/src/jobs/runner.js';
import { createLogger } from '../../server/src/logger.js';
import { startServer } from '../../server/src/server.js';
import { type Database, openDatabase } from '../../server/src/storage/db.js';
import { type AppRow, insertApp, insertOrganization, type OrganizationRow } from '../../server/src/storage/tenancy.js';
import type { Tally } from '../../server/src/tally.js';
import { observeContract, recordPrismViolation } from './contract-observer.js';
import { startPrismFront } from './prism-front.js';

export const TEST_ADMIN_TOKEN = 'tk_admin_test-token-for-the-suite';

/** This run's database: the shared PostgreSQL one, or a fresh copy of the embedded template. */
export async function openTestDatabase(): Promise<Database> {
  const target = inject('database');
  const logger = createLogger((process.env.TEST_LOG_LEVEL ?? 'silent') as 'silent');
  if (target.kind === 'postgres') return openDatabase({ databaseUrl: target.url, migrate: false, logger });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-db-'));
  fs.cpSync(target.templateDir, dir, { recursive: true });
  const db = await openDatabase({ dataDir: dir, migrate: false, logger });
  return {
    ...db,
    async close() {
      await db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Tenant {
  organization: OrganizationRow;
  app: AppRow;
  apiKey: string;
  apiKeyId: string;
  mcpKey: string;
  /** A client authenticated with this tenant's REST key. */
  client: TallyClient;
}

export interface TestServer {
  url: string;
  /**
   * The server itself, never through Prism (a Prism run's `url` is a front before Prism): for what a
   * buffering proxy hides, such as a client abandoning an answer halfway.
   */
  directUrl: string;
  db: Database;
  config: Config;
  jobs: JobRunner;
  /** The server's composition root: its service context, sandbox, caches, hooks and rate limiter. */
  tally: Tally;
  createTenant(options?: {
    orgWide?: boolean;
    mcpPermissions?: Permission[];
    organizationId?: string;
  }): Promise<Tenant>;
  clientFor(apiKey?: string): TallyClient;
  close(): Promise<void>;
}

/**
 * Starts a server. `options.database` makes it a second instance on another server's database
 * (its `close()` then leaves that database open); `options.clock` fixes its "now".
 */
export async function startTestServer(
  env: Record<string, string> = {},
  options: {
    database?: Database;
    clock?: () => Date;
    jobs?: (name: string) => boolean;
    jobSchema?: string;
    /** Where the server's log lines go (default standard output). */
    logDestination?: DestinationStream;
  } = {},
): Promise<TestServer> {
  const db = options.database ?? (await openTestDatabase());
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-test-'));
  const config = loadConfig({
    NODE_ENV: 'test',
    RATE_LIMITS: 'off',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PORT: '0',
    DATA_DIR: dataDir,
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    // Tests run on busy shared machines: the embedded time cap (2 s by default) is set by the
    // tests that are about it, and generous elsewhere.
    EMBEDDED_QUERY_TIMEOUT_MS: '15000',
    // Servers of a run share one PostgreSQL database and its job queue: only the campaign tests'
    // server (CAMPAIGN_WORKERS=on, one at a time) runs campaign jobs, on its own clock.
    CAMPAIGN_WORKERS: 'off',
    ...env,
  });
  const running = await startServer(config, createLogger(config.logLevel, options.logDestination), {
    database: db,
    writeCredentialsFile: false,
    clock: options.clock,
    jobs: options.jobs,
    jobSchema: options.jobSchema,
  });
  observeContract(running.server);
  // TEST_PRISM=1: every request goes through the run's Prism, which checks it and its answer
  // (helpers/prism.ts); what it finds fails the run (recordPrismViolation) and this server's close().
  const prismUrl = inject('prism');
  const prism = prismUrl ? await startPrismFront(prismUrl, running.url, recordPrismViolation) : null;
  const url = prism?.url ?? running.url;
  const clientFor = (apiKey?: string) => createTallyClient({ baseUrl: url, apiKey });
  return {
    url,
    directUrl: running.url,
    db,
    config,
    jobs: running.jobs,
    tally: running.tally,
    clientFor,
    async createTenant(options = {}) {
      const organization =
        options.organizationId !== undefined
          ? (await db.knex<OrganizationRow>('organizations').where({ id: options.organizationId }).first())!
          : await insertOrganization(db.knex, {
              id: uuidv7(),
              name: `Test org ${Math.random().toString(36).slice(2, 8)}`,
            });
      const app = await insertApp(db.knex, { id: uuidv7(), organization_id: organization.id, name: 'Test app' });
      const rest = await createKey(db.knex, app, { kind: 'rest', orgWide: options.orgWide });
      const mcp = await createKey(db.knex, app, {
        kind: 'mcp',
        permissions: options.mcpPermissions ?? ['read', 'write'],
      });
      return {
        organization,
        app,
        apiKey: rest.secret,
        apiKeyId: rest.row.id,
        mcpKey: mcp.secret,
        client: clientFor(rest.secret),
      };
    },
    async close() {
      await prism?.close();
      // PRISM_COUNTS=FILE: how many of this server's requests went through Prism, and how many around.
      if (prism && process.env.PRISM_COUNTS)
        fs.appendFileSync(
          process.env.PRISM_COUNTS,
          `${expect.getState().testPath} ${JSON.stringify(prism.counts())}\n`,
        );
      await running.close();
      if (!options.database) await db.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
      const violations = prism?.violations() ?? [];
      if (violations.length > 0)
        throw new Error(`Prism found requests or answers that break the contract:\n${violations.join('\n')}`);
    },
  };
}
