// The job runner: background work on pg-boss (10.4.2), in PostgreSQL or the embedded database, so
// that several Tally instances share one queue and a job survives a restart. Each job is a queue
// with a worker, and recurring jobs have a cron schedule (in UTC unless they say otherwise).
// Campaign sends and retention add their jobs here; see jobs/index.ts for the list.
import PgBoss from 'pg-boss';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.js';
import type { Database } from '../storage/db.js';
import { jobQueueDatabase } from '../storage/job-queue.js';

export interface JobDefinition<T extends object = object> {
  name: string;
  /** A cron expression for recurring jobs. */
  cron?: string;
  /** How often an idle worker looks for work, in seconds (default 2; pg-boss allows 0.5 and up). */
  pollingIntervalSeconds?: number;
  /** Only where this holds (for example embedded mode only). */
  when?: (database: Database) => boolean;
  run(data: T): Promise<void>;
}

export const JOB_SCHEMA = 'pgboss';
/** How long stop() waits for running jobs. */
const STOP_TIMEOUT_MS = 10_000;

export class JobRunner {
  private boss: PgBoss | null = null;
  private stopping: Promise<void> | null = null;
  private definitions = new Map<string, JobDefinition>();

  /** The schema of the queue's tables: instances that share it share the queue. */
  readonly schema: string;

  constructor(
    private readonly database: Database,
    private readonly logger: Logger,
    private readonly options: { pollingIntervalSeconds?: number; schema?: string; metrics?: Metrics } = {},
  ) {
    this.schema = options.schema ?? JOB_SCHEMA;
  }

  async start(jobs: JobDefinition[]): Promise<void> {
    const boss = new PgBoss({
      db: jobQueueDatabase(this.database.knex, (err) =>
        this.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'a job ran, but the database was away when it was to be marked done: it will run again after it expires',
        ),
      ),
      schema: this.schema,
      // Maintenance and the cron clock run in every instance; pg-boss coordinates them in the database.
      supervise: true,
      schedule: true,
      migrate: true,
    });
    this.stopping = null;
    boss.on('error', (err) => this.logger.warn({ err: err.message }, 'job runner'));
    await boss.start();
    this.boss = boss;
    for (const job of jobs) {
      if (job.when && !job.when(this.database)) continue;
      this.definitions.set(job.name, job as JobDefinition);
      // Instances starting together on one database race on pg-boss's queue DDL: retry.
      await retryRace(() => boss.createQueue(job.name));
      if (job.cron) await retryRace(() => boss.schedule(job.name, job.cron!, {}, { tz: 'UTC' }));
      await boss.work(
        job.name,
        {
          pollingIntervalSeconds: job.pollingIntervalSeconds ?? this.options.pollingIntervalSeconds ?? 2,
          batchSize: 1,
        },
        async ([item]) => {
          if (!item) return;
          const started = Date.now();
          const { metrics } = this.options;
          const stopTimer = metrics?.jobDuration.startTimer({ job: job.name });
          try {
            await job.run((item.data ?? {}) as object);
            metrics?.jobs.inc({ job: job.name, outcome: 'completed' });
            this.logger.debug({ job: job.name, id: item.id, ms: Date.now() - started }, 'job done');
          } catch (err) {
            metrics?.jobs.inc({ job: job.name, outcome: 'failed' });
            this.logger.error({ err, job: job.name, id: item.id }, 'job failed');
            throw err;
          } finally {
            stopTimer?.();
          }
        },
      );
    }
  }

  private running(): PgBoss {
    if (!this.boss) throw new Error('The job runner is not running.');
    return this.boss;
  }

  /** Queues one run of a job now; returns the job id. */
  async runNow(name: string, data: object = {}): Promise<string> {
    if (!this.definitions.has(name)) throw new Error(`No job named ${name}.`);
    const id = await this.running().send(name, data);
    if (!id) throw new Error(`The job ${name} was not queued.`);
    return id;
  }

  /** Queues a job for whichever instance works its queue (this one may not); returns its id or null. */
  async wake(name: string): Promise<string | null> {
    return this.running().send(name, {});
  }

  /**
   * Queues a job to start in `seconds` for whichever instance works its queue; one per `key` and
   * minute of queueing (so many callers asking for the same moment queue one run).
   */
  async wakeAfter(name: string, seconds: number, key: string): Promise<string | null> {
    return this.running().send(
      name,
      {},
      { ...(seconds > 0 ? { startAfter: seconds } : {}), singletonKey: key, singletonSeconds: 60 },
    );
  }

  /** The state of one queued job (created, active, completed, failed...). */
  async state(name: string, id: string): Promise<string | null> {
    return (await this.running().getJobById(name, id, { includeArchive: true }))?.state ?? null;
  }

  /** Jobs queued and not yet started, per queue this runner works; empty when it is not running. */
  async queueDepths(): Promise<Record<string, number>> {
    const boss = this.boss;
    if (!boss) return {};
    const depths: Record<string, number> = {};
    for (const name of this.definitions.keys()) depths[name] = await boss.getQueueSize(name);
    return depths;
  }

  /** The recurring schedules registered in the database. */
  async schedules(): Promise<{ name: string; cron: string }[]> {
    return (await this.running().getSchedules()).map((s) => ({ name: s.name, cron: s.cron }));
  }

  /**
   * Stops taking jobs and waits (up to 10 s) for the running ones to finish; pg-boss marks a job
   * still running then as failed, to be retried by any instance as its queue allows. A second call
   * waits for the first.
   */
  stop(): Promise<void> {
    if (!this.stopping) {
      const boss = this.boss;
      this.boss = null;
      this.stopping = boss
        ? boss.stop({ graceful: true, close: false, wait: true, timeout: STOP_TIMEOUT_MS }).then(() => {
            this.logger.info('shutdown: job runner stopped');
          })
        : Promise.resolve();
    }
    return this.stopping;
  }
}

/**
 * Runs a setup step that instances starting at the same moment on one database may race on
 * (pg-boss creates a queue's table partition): a deadlock or duplicate from the race is retried.
 */
async function retryRace<T>(step: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await step();
    } catch (err) {
      const code = (err as { code?: string } | null)?.code;
      if (i >= attempts || (code !== '40P01' && code !== '23505')) throw err;
      await new Promise((r) => setTimeout(r, 50 * i));
    }
  }
}
