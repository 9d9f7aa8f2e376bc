// Starts Tally: builds the composition root (tally.ts, which opens and migrates storage),
// bootstraps an empty database, starts the jobs, listens (http/listener.ts: timeouts against slow
// clients) with the lean ingestion path in front of the Express app (http/ingest-listener.ts).
// Used by main.ts and by the test harness, so both run exactly the same start-up, and the same
// shutdown: close() drains HTTP (bounded by SHUTDOWN_GRACE_SECONDS) while the job runner
// stops, then writes the events still pending and closes the root, database last.

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { bootstrapIfEmpty, type Credentials, writeCredentials } from './admin/bootstrap.js';
import { resealSecrets } from './admin/rotation.js';
import { createApp } from './app.js';
import type { Config } from './config.js';
import { ingestListener } from './http/ingest-listener.js';
import { expressMessageClasses, type Listener, listen } from './http/listener.js';
import { jobDefinitions, PUSH_SWEEP, REFRESH_SANDBOX_STATISTICS } from './jobs/index.js';
import type { JobRunner } from './jobs/runner.js';
import type { Database } from './storage/db.js';
import { createTally, type Tally, type TallyOptions } from './tally.js';

export interface RunningServer {
  url: string;
  database: Database;
  server: Server;
  jobs: JobRunner;
  /** The composition root the server runs on. */
  tally: Tally;
  /** Set on the first start of an empty database. */
  credentials: Credentials | null;
  /**
   * Stops gracefully: no new connections, requests in flight answered (for at most `graceMs`,
   * SHUTDOWN_GRACE_SECONDS by default, then their connections are closed), jobs stopped, every
   * accepted event committed, the root closed. A second call waits for the first.
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

export interface StartOptions extends Omit<TallyOptions, 'logger'> {
  writeCredentialsFile?: boolean;
}

export async function startServer(config: Config, logger: Logger, options: StartOptions = {}): Promise<RunningServer> {
  const { writeCredentialsFile, ...rootOptions } = options;
  const tally = await createTally(config, { ...rootOptions, logger });
  let credentials: Credentials | null;
  try {
    credentials = await firstStart(tally, writeCredentialsFile !== false);
    // Set the SQL sandbox up (PostgreSQL) before taking traffic: its first setup alters tables.
    await tally.sandbox.executor.confinement();
  } catch (err) {
    await tally.close();
    throw err;
  }
  let closing: Promise<void> | undefined;
  const links = { base: config.publicBaseUrl ?? '' };
  const campaignWorkers = await startJobs(tally, () => links.base);
  let listener: Listener;
  try {
    const app = createApp(tally);
    listener = await listen(
      config.leanIngestion ? await ingestListener(tally, app) : app,
      config.port,
      config.host,
      expressMessageClasses(app),
    );
  } catch (err) {
    await tally.close();
    throw err;
  }
  const server = listener.server;
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  links.base ||= `http://${host}:${port}`;
  // What a previous instance left pending when it stopped (crash, SIGKILL) is resolved at start.
  if (campaignWorkers && tally.works(PUSH_SWEEP)) await tally.jobs.runNow(PUSH_SWEEP);
  return {
    url: `http://${host}:${port}`,
    database: tally.database,
    server,
    jobs: tally.jobs,
    tally,
    credentials,
    close(options = {}) {
      closing ??= stop(listener, tally, options.graceMs ?? config.shutdownGraceMs);
      return closing;
    },
  };
}

/** The shutdown sequence; each step is logged at info. */
async function stop(listener: Listener, tally: Tally, graceMs: number): Promise<void> {
  // pg-boss waits up to 10 s for a running job: that wait overlaps the HTTP drain. Events accepted
  // meanwhile that wake a worker leave the wake-up to the worker's schedule, here or elsewhere.
  const jobsStopped = tally.jobs
    .stop()
    .catch((err) => tally.logger.warn({ err }, 'shutdown: the job runner did not stop cleanly'));
  await listener.drain(graceMs, tally.logger);
  await jobsStopped;
  await tally.close();
}

/**
 * On an empty database: the default organization, app and keys (written to the data directory if
 * asked). During a SECRET_KEY rotation: the re-seal pass.
 */
async function firstStart(tally: Tally, writeFile: boolean): Promise<Credentials | null> {
  const { config, database, logger } = tally;
  const credentials = await bootstrapIfEmpty(database.knex, config.adminToken);
  if (credentials && writeFile) {
    const file = writeCredentials(config.dataDir, credentials);
    logger.info({ file }, 'first start: created the default organization, app and keys');
  }
  // A SECRET_KEY rotation under way: what is still sealed with a previous key is sealed again now.
  if (config.secretKey && config.previousSecretKeys.length > 0) await resealSecrets(tally.context, null);
  return credentials;
}

/**
 * Starts the jobs this root works (the campaign workers only with CAMPAIGN_WORKERS=on; their push
 * links start with `linkBase()`). Returns whether the campaign workers run here.
 */
async function startJobs(tally: Tally, linkBase: () => string): Promise<boolean> {
  const { config, database, clock, logger, jobs } = tally;
  const engine = config.campaignWorkers ? { ctx: tally.context, linkBase } : undefined;
  await jobs.start(jobDefinitions(database, clock, logger, engine).filter((job) => tally.works(job.name)));
  // The embedded database keeps no statistics of its own: gather them once at start.
  if (database.kind === 'pglite' && tally.works(REFRESH_SANDBOX_STATISTICS)) {
    await jobs.runNow(REFRESH_SANDBOX_STATISTICS);
  }
  return engine !== undefined;
}
