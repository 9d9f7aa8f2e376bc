// What every service receives: the database, the configuration, a logger, a clock, the event
// writer, the language model, the sandbox executor and, where a job runner runs, a way to wake
// the delivery worker.
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Llm } from './llm/index.js';
import type { SandboxDatabase } from './sandbox/queries/executor.js';
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
  /** Runs SQL over the sandbox relations (sandbox/sandbox.ts is the way in). */
  readonly sandbox: SandboxDatabase;
  /**
   * Asks the job runner to make the push attempts due at `at` (engagement/push/sweeper.ts). Absent
   * where no job runner runs; the worker's minute schedule then finds them.
   */
  readonly wakeDeliveries?: (at: Date) => void;
}
