// What every service receives: the database, the configuration, a logger, a clock, the event
// writer, the language model, the metrics, the sandbox, the wings' caches and hooks and, where a job runner
// runs, a way to wake the delivery worker. The composition root (tally.ts) builds one per root;
// nothing here is looked up by handle or configuration elsewhere.
import type { Logger } from 'pino';
import type { AppCache } from './admin/app-cache.js';
import type { KeyCache } from './admin/keys.js';
import type { Config } from './config.js';
import type { TriggerCampaigns } from './engagement/campaign-triggers.js';
import type { LexiconCache } from './language/lexicon-cache.js';
import type { Llm } from './llm/types.js';
import type { Metrics } from './metrics.js';
import type { ErasureHooks } from './privacy/erasure-hooks.js';
import type { Sandbox } from './sandbox/open.js';
import type { EventWriter } from './storage/event-writer.js';
import type { Db } from './storage/handle.js';

/** The current time; tests pass a fixed or controllable clock. */
export type Clock = () => Date;

export interface ServiceContext {
  readonly db: Db;
  readonly config: Config;
  readonly logger: Logger;
  /** The current time; tests pass a fixed clock. */
  readonly clock: Clock;
  /** Writes events with group commit; only the ingestion entry point (ingestion.ts) calls it. */
  readonly ingestor: EventWriter;
  /** The configured language model, or null: callers then use their built-in engines. */
  readonly llm: Llm | null;
  /** The root's Prometheus metrics (metrics.ts): wings count what they do on it. */
  readonly metrics: Metrics;
  /** The sandbox executor and its admission (sandbox/sandbox.ts is the way in). */
  readonly sandbox: Sandbox;
  /** API keys by hash, kept a few seconds or until revoked (admin/keys.ts). */
  readonly keys: KeyCache;
  /** Apps by id for the ingestion path, kept a few seconds (admin/app-cache.ts). */
  readonly apps: AppCache;
  /** The apps' lexicons (language/service.ts). */
  readonly lexicons: LexiconCache;
  /** What a user's erasure runs besides its own deletes (privacy/privacy.ts). */
  readonly erasureHooks: ErasureHooks;
  /** Which apps have trigger campaigns (engagement/campaigns.ts forgets, the event writer asks). */
  readonly triggerCampaigns: TriggerCampaigns;
  /**
   * Asks the job runner to make the push attempts due at `at` (engagement/push/sweeper.ts). Absent
   * where no job runner runs; the worker's minute schedule then finds them.
   */
  readonly wakeDeliveries?: (at: Date) => void;
}
