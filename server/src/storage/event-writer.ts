// The event writer, with group commit: events of concurrent requests are written together, and
// each request is answered only after its rows are committed. A group is split by app, and each
// app's part is one call of the database function tally_ingest (event-rows.ts), so one round trip
// and its own transaction: one request's rows are all-or-nothing (a website visit is written with
// its page_view event). Several groups are in flight at once on several connections (the counters
// they share are taken last and in key order, so they never deadlock); requests arriving meanwhile
// form the next group. If a grouped write fails, each of its requests is retried on its own, so one
// bad request never sinks the others. It writes what it is given: the ingestion policies
// (tracking/ingestion.ts, the only caller) have been applied before.
// For apps that may have trigger campaigns (a cached check), the events that can fire one (not demo
// data, not bot traffic, client time at most an hour old) go to the trigger outbox in the same
// transaction; the worker is woken after the commit.
// Website events sent without a valid user_hash may only reach users open to browsers: that is
// checked on the user rows as the function resolved and locked them, and a request that names any
// other user is refused alone while the rest of its group is written without it.
// Memory is bounded: past `queueLimit` events waiting or in flight, new requests are refused at
// once (IngestQueueFullError, a 503 with Retry-After) instead of piling up behind a slow database.
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.js';
import {
  type IngestEvent,
  type IngestResult,
  type RequestRows,
  type TriggerHooks,
  type VisitWrite,
  writeAppPart,
} from './event-rows.js';

export {
  type IngestEvent,
  type IngestResult,
  TRIGGER_MAX_AGE_MS,
  type TriggerHooks,
  type VisitWrite,
} from './event-rows.js';

/**
 * Website events without a valid user_hash named users that are not open to browsers (created
 * through the REST API, written by it, or created with a hash): their requests are not written.
 */
export class ClosedToBrowsersError extends Error {
  constructor(
    /** The identifiers, as the request gave them, that name such users. */
    readonly userRefs: string[],
  ) {
    super(`Website events without a user_hash named users that are not open to browsers: ${userRefs.join(', ')}`);
  }
}

/** More events are waiting to be written than the writer holds: the request is refused, not queued. */
export class IngestQueueFullError extends Error {
  constructor(
    readonly queued: number,
    readonly limit: number,
  ) {
    super(`${queued} events are waiting to be written (at most ${limit})`);
  }
}

interface PendingRequest extends RequestRows {
  appId: string;
  resolve(results: IngestResult[]): void;
  reject(err: unknown): void;
}

export interface EventWriterOptions {
  /** Groups written at once, each on its own connection (1 on a database with one connection). */
  groupsInFlight?: number;
  /** Events waiting or in flight, at most; past it submit() refuses. */
  queueLimit?: number;
  /** Called after each commit that stored events (the rollup's fold is woken from here). */
  stored?: () => void;
}

const MAX_EVENTS_PER_GROUP = 5_000;
/** serialization_failure and deadlock_detected: the statement rolled back whole and may run again. */
const RETRIED_STATES = new Map([
  ['40001', 'changed'],
  ['40P01', 'deadlock'],
]);
const WRITE_ATTEMPTS = 4;

export class EventWriter {
  private pending: PendingRequest[] = [];
  private pendingEvents = 0;
  /** Events of the groups being written. */
  private inFlightEvents = 0;
  private inFlightGroups = 0;
  private scheduled = false;
  private idleWaiters: (() => void)[] = [];
  private readonly groupsInFlight: number;
  private readonly queueLimit: number;
  private readonly stored: (() => void) | undefined;

  constructor(
    private readonly db: Knex,
    private readonly logger: Logger,
    private readonly triggers?: TriggerHooks,
    private readonly metrics?: Metrics,
    options: EventWriterOptions = {},
  ) {
    this.groupsInFlight = Math.max(1, options.groupsInFlight ?? 1);
    this.queueLimit = options.queueLimit ?? Number.POSITIVE_INFINITY;
    this.stored = options.stored;
  }

  /** Events submitted and not yet committed (or refused). */
  get queuedEvents(): number {
    return this.pendingEvents + this.inFlightEvents;
  }

  /**
   * Stores one request's events and visits (all or none) and resolves once they are committed.
   * Throws IngestQueueFullError at once when the writer already holds its limit of events.
   */
  submit(events: IngestEvent[], visits: VisitWrite[] = []): Promise<IngestResult[]> {
    if (events.length === 0 && visits.length === 0) return Promise.resolve([]);
    const queued = this.queuedEvents;
    if (queued > 0 && queued + events.length > this.queueLimit) {
      this.metrics?.ingestRefusedFull.inc();
      return Promise.reject(new IngestQueueFullError(queued, this.queueLimit));
    }
    const appId = events[0]?.appId ?? visits[0]!.app_id;
    return new Promise((resolve, reject) => {
      this.pending.push({ appId, events, visits, resolve, reject });
      this.pendingEvents += events.length;
      this.schedule();
    });
  }

  /** Waits until everything submitted so far is written. */
  idle(): Promise<void> {
    if (this.pending.length === 0 && this.inFlightGroups === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Starts groups on the next turn of the event loop, so that requests of this turn join them. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.startGroups();
    });
  }

  private startGroups(): void {
    while (this.pending.length > 0 && this.inFlightGroups < this.groupsInFlight) {
      let count = 0;
      let take = 0;
      while (
        take < this.pending.length &&
        (take === 0 || count + this.pending[take]!.events.length <= MAX_EVENTS_PER_GROUP)
      ) {
        count += this.pending[take]!.events.length;
        take++;
      }
      const group = this.pending.splice(0, take);
      this.pendingEvents -= count;
      this.inFlightEvents += count;
      this.inFlightGroups++;
      this.metrics?.ingestBatchEvents.observe(count);
      void this.flushGroup(group).finally(() => {
        this.inFlightEvents -= count;
        this.inFlightGroups--;
        if (this.pending.length > 0) this.startGroups();
        else if (this.inFlightGroups === 0) for (const wake of this.idleWaiters.splice(0)) wake();
      });
    }
  }

  /** Each app's part of the group at once; each part is its own transaction. */
  private async flushGroup(group: PendingRequest[]): Promise<void> {
    const byApp = new Map<string, PendingRequest[]>();
    for (const request of group) {
      const part = byApp.get(request.appId);
      if (part) part.push(request);
      else byApp.set(request.appId, [request]);
    }
    await Promise.all([...byApp].map(([appId, part]) => this.flushPart(appId, part)));
  }

  private async flushPart(appId: string, part: PendingRequest[]): Promise<void> {
    try {
      this.settle(part, await this.write(appId, part));
    } catch (err) {
      if (part.length === 1) {
        part[0]!.reject(err);
        return;
      }
      this.logger.warn({ err }, 'grouped event write failed; retrying each request on its own');
      this.metrics?.ingestGroupRetries.inc();
      for (const request of part) {
        try {
          this.settle([request], await this.write(appId, [request]));
        } catch (single) {
          request.reject(single);
        }
      }
    }
  }

  private settle(part: PendingRequest[], written: Awaited<ReturnType<typeof writeAppPart>>): void {
    part.forEach((request, i) => {
      const results = written.results[i];
      if (results) request.resolve(results);
      else request.reject(new ClosedToBrowsersError(written.refusedRefs.get(i) ?? []));
    });
  }

  private async write(appId: string, part: PendingRequest[]) {
    const stopTimer = this.metrics?.ingestCommitDuration.startTimer();
    let written: Awaited<ReturnType<typeof writeAppPart>>;
    for (let attempt = 1; ; attempt++) {
      try {
        written = await writeAppPart(this.db, appId, part, this.triggers);
        break;
      } catch (err) {
        // A user erased, or closed to browsers by a REST write, while the call wrote its events, or
        // a deadlock with another kind of write: the call changed nothing, and runs again.
        const reason = RETRIED_STATES.get((err as { code?: string }).code ?? '');
        if (attempt >= WRITE_ATTEMPTS || !reason) throw err;
        this.metrics?.ingestWriteRetries.inc({ reason });
      }
    }
    stopTimer?.();
    if (this.metrics) {
      let events = 0;
      let duplicates = 0;
      for (const results of written.results) {
        if (!results) continue;
        events += results.length;
        for (const r of results) if (r.duplicate) duplicates++;
      }
      this.metrics.ingestEvents.inc({ outcome: 'written' }, events - duplicates);
      this.metrics.ingestEvents.inc({ outcome: 'duplicate' }, duplicates);
    }
    if (written.outbox > 0) this.triggers?.fired();
    this.stored?.();
    return written;
  }
}
