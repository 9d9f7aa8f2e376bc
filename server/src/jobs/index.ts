// The jobs Tally runs in the background, on the job runner (jobs/runner.ts).
import type { Logger } from 'pino';
import { foldRollups, rebuildRollups } from '../analytics/rollups.js';
import type { Clock } from '../context.js';
import { type CampaignEngine, runDueCampaigns } from '../engagement/campaign-runs.js';
import { runTriggers } from '../engagement/campaign-trigger-runs.js';
import { sweepPending } from '../engagement/push/sweeper.js';
import { purgeExpiredKeys } from '../idempotency/idempotency.js';
import { enforceRetention } from '../privacy/retention.js';
import type { Database } from '../storage/db.js';
import {
  analyzeGrownTables,
  DEDUP_WINDOW_DAYS,
  purgeDedupRowsBefore,
  refreshSandboxStatistics,
} from '../storage/events.js';
import { allAppIds } from '../storage/tenancy.js';
import type { JobDefinition } from './runner.js';

export const PURGE_EVENT_DEDUP = 'purge-event-dedup';
export const REFRESH_SANDBOX_STATISTICS = 'refresh-sandbox-statistics';
export const CAMPAIGN_TICK = 'campaign-tick';
export const CAMPAIGN_TRIGGERS = 'campaign-triggers';
export const PUSH_SWEEP = 'push-sweep';
export const PURGE_IDEMPOTENCY_KEYS = 'purge-idempotency-keys';

export const ENFORCE_RETENTION = 'enforce-retention';
export const FOLD_ROLLUPS = 'fold-rollups';
export const REBUILD_ROLLUPS = 'rebuild-rollups';

export function jobDefinitions(
  database: Database,
  clock: Clock,
  logger?: Logger,
  campaigns?: CampaignEngine,
): JobDefinition[] {
  const campaignJobs: JobDefinition[] = campaigns
    ? [
        {
          // Due one-shots, recurring runs, slipping-away scans, sends held by quiet hours, and any
          // trigger occurrence a wake-up missed.
          name: CAMPAIGN_TICK,
          cron: '* * * * *',
          async run() {
            await runTriggers(campaigns);
            await runDueCampaigns(campaigns);
          },
        },
        {
          // Queued by ingestion after a commit that wrote trigger outbox rows; looked for every half
          // second, so a triggered push leaves soon after its event.
          name: CAMPAIGN_TRIGGERS,
          pollingIntervalSeconds: 0.5,
          async run() {
            await runTriggers(campaigns);
          },
        },
        {
          // The delivery worker (engagement/push/sweeper.ts): every push attempt after a delivery's
          // first, /sendpush's included. Retries due (woken for their time by the instance that
          // scheduled them, whatever its CAMPAIGN_WORKERS), and deliveries a crash left `pending`
          // (resent under their idempotency key, or marked unknown); also run when an instance starts.
          name: PUSH_SWEEP,
          cron: '* * * * *',
          async run() {
            await sweepPending(campaigns, campaigns.ctx.config.pushPendingStaleMs);
          },
        },
      ]
    : [];
  return [
    ...campaignJobs,
    {
      // Apps with a retention period lose events, visits and deliveries older than it (docs/privacy.md).
      name: ENFORCE_RETENTION,
      cron: '41 2 * * *',
      // `now` (ISO 8601) runs it as of that time: any instance sharing the queue may take the run,
      // so the time travels with it (tests, and operators replaying a missed day).
      async run(data: { now?: string }) {
        const at = data.now === undefined ? clock : () => new Date(data.now!);
        for (const outcome of await enforceRetention(database.knex, at)) {
          if (outcome.events + outcome.visits + outcome.deliveries > 0) logger?.info(outcome, 'retention applied');
        }
      },
    },
    ...rollupJobs(database, logger),
    ...purgeJobs(database, clock),
    {
      // The embedded database runs no autovacuum: vacuum and analyze the tables that grow most.
      name: REFRESH_SANDBOX_STATISTICS,
      cron: '*/10 * * * *',
      when: (db) => db.kind === 'pglite',
      async run() {
        await refreshSandboxStatistics(database.knex);
      },
    },
  ];
}

/** Rows kept for a window only (insert_id dedup rows, idempotency keys), deleted once it has passed. */
function purgeJobs(database: Database, clock: Clock): JobDefinition[] {
  return [
    {
      // insert_id repeats are only recognised for 7 days; older dedup rows serve nothing.
      name: PURGE_EVENT_DEDUP,
      cron: '17 3 * * *',
      async run() {
        const before = new Date(clock().getTime() - DEDUP_WINDOW_DAYS * 86_400_000);
        for (const appId of await allAppIds(database.knex)) {
          await purgeDedupRowsBefore(database.knex, appId, before);
        }
      },
    },
    {
      // Idempotency keys are remembered for 24 hours; their stored answers (which may quote users)
      // go within the hour after.
      name: PURGE_IDEMPOTENCY_KEYS,
      cron: '23 * * * *',
      async run() {
        const now = clock();
        for (const appId of await allAppIds(database.knex)) await purgeExpiredKeys(database.knex, appId, now);
      },
    },
  ];
}

/** The activity rollup's upkeep (analytics/rollups.ts). */
function rollupJobs(database: Database, logger?: Logger): JobDefinition[] {
  return [
    {
      // The activity rollup's deltas into its daily rows (analytics/rollups.ts): woken by ingestion
      // after its commits (every 2 s at most), and every minute in any case.
      name: FOLD_ROLLUPS,
      cron: '* * * * *',
      async run() {
        await foldRollups(database.knex);
        // Woken by ingestion, it also keeps ingestion's lookups on their indexes (storage/events.ts).
        await analyzeGrownTables(database.knex);
      },
    },
    {
      // Rollups being built (after the upgrade that created them, or after an organization's time
      // zone changed), a paced batch of users at a time; metrics read raw events meanwhile.
      name: REBUILD_ROLLUPS,
      cron: '* * * * *',
      async run() {
        const done = await rebuildRollups(database.knex);
        if (done.users > 0 || done.events > 0 || done.properties > 0)
          logger?.info(
            done,
            'rollups built further (users recounted, existing events counted per name and per property)',
          );
      },
    },
  ];
}
