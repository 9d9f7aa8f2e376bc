// The event writer, with group commit: events of concurrent requests are written together in one
// transaction of multi-row statements, and each request is answered only after its rows are
// committed. One request's rows are all-or-nothing (a website visit is written in the same
// transaction as its page_view event); if a grouped write fails, each request of the group is
// retried on its own so one bad request never sinks the others. It writes what it is given: the
// ingestion policies (tracking/ingestion.ts, the only caller) have been applied before.
// For apps that may have trigger campaigns (a cached check), the events that can fire one (not demo
// data, not bot traffic, client time at most an hour old) are matched to those campaigns and
// written to the trigger outbox in the same transaction; the worker is woken after the commit.
// Website events sent without a valid user_hash may only reach users open to browsers
// (`openToBrowsers`): that is checked on the user rows as this transaction resolved and locked
// them, and a request that names any other user is refused alone while the rest of its group is
// written without it.
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.js';
import { type IngestEvent, type IngestResult, type TriggerHooks, writeAppEvents } from './event-rows.js';
import { resolveOrCreateUsers } from './event-writer-users.js';
import { insertVisits, type VisitRow } from './ingested-rows.js';

export { type IngestEvent, type IngestResult, TRIGGER_MAX_AGE_MS, type TriggerHooks } from './event-rows.js';

/** A visit to write with its request's events; its user is the one `userRef` names. */
export type VisitWrite = Omit<VisitRow, 'user_id' | 'received_at'> & { userRef: string };

/**
 * Website events without a valid user_hash named users that are not open to browsers (created
 * through the REST API, written by it, or created with a hash): their requests are not written.
 */
export class ClosedToBrowsersError extends Error {
  constructor(
    /** The identifiers, as the request gave them, that name such users. */
    readonly userRefs: string[],
    /** Positions of the refused events in the write that found them. */
    readonly eventIndexes: number[] = [],
  ) {
    super(`Website events without a user_hash named users that are not open to browsers: ${userRefs.join(', ')}`);
  }
}

interface PendingRequest {
  events: IngestEvent[];
  visits: VisitWrite[];
  resolve(results: IngestResult[]): void;
  reject(err: unknown): void;
}

const MAX_EVENTS_PER_TRANSACTION = 5_000;

export class EventWriter {
  private pending: PendingRequest[] = [];
  /** Events of the group being written. */
  private inFlight = 0;
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly db: Knex,
    private readonly logger: Logger,
    private readonly triggers?: TriggerHooks,
    private readonly metrics?: Metrics,
  ) {}

  /** Events submitted and not yet committed (or refused). */
  get queuedEvents(): number {
    let n = this.inFlight;
    for (const request of this.pending) n += request.events.length;
    return n;
  }

  /** Stores one request's events and visits (all or none) and resolves once they are committed. */
  submit(events: IngestEvent[], visits: VisitWrite[] = []): Promise<IngestResult[]> {
    if (events.length === 0 && visits.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.pending.push({ events, visits, resolve, reject });
      if (!this.flushing) this.flushing = this.drain();
    });
  }

  /** Waits until everything submitted so far is written. */
  async idle(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async drain(): Promise<void> {
    // Yield once so that requests arriving in the same turn of the event loop join this group.
    await new Promise((r) => setImmediate(r));
    try {
      while (this.pending.length > 0) {
        let count = 0;
        let take = 0;
        while (
          take < this.pending.length &&
          (take === 0 || count + this.pending[take]!.events.length <= MAX_EVENTS_PER_TRANSACTION)
        ) {
          count += this.pending[take]!.events.length;
          take++;
        }
        this.inFlight = count;
        this.metrics?.ingestBatchEvents.observe(count);
        try {
          await this.flushGroup(this.pending.splice(0, take));
        } finally {
          this.inFlight = 0;
        }
      }
    } finally {
      this.flushing = null;
    }
  }

  private async flushGroup(group: PendingRequest[]): Promise<void> {
    let pending = group;
    try {
      for (;;) {
        try {
          const results = await this.write(
            pending.flatMap((r) => r.events),
            pending.flatMap((r) => r.visits),
          );
          let offset = 0;
          for (const request of pending) {
            request.resolve(results.slice(offset, offset + request.events.length));
            offset += request.events.length;
          }
          return;
        } catch (err) {
          if (!(err instanceof ClosedToBrowsersError)) throw err;
          // Refuse the requests that named such users; write the rest of the group without them.
          pending = refuseClosed(pending, err);
          if (pending.length === 0) return;
        }
      }
    } catch (err) {
      if (pending.length === 1) {
        pending[0]!.reject(err);
        return;
      }
      this.logger.warn({ err }, 'grouped event write failed; retrying each request on its own');
      this.metrics?.ingestGroupRetries.inc();
      for (const request of pending) {
        try {
          request.resolve(await this.write(request.events, request.visits));
        } catch (single) {
          request.reject(single);
        }
      }
    }
  }

  private async write(events: IngestEvent[], visits: VisitWrite[]): Promise<IngestResult[]> {
    const outbox = { rows: 0 };
    const stopTimer = this.metrics?.ingestCommitDuration.startTimer();
    const results = await this.db.transaction(async (trx) => {
      const results = new Array<IngestResult>(events.length);
      const byApp = new Map<string, number[]>();
      events.forEach((e, i) => {
        const list = byApp.get(e.appId);
        if (list) list.push(i);
        else byApp.set(e.appId, [i]);
      });
      // Every app's users first: the requests refused by the identity rule are all found before
      // anything is written, so a group is written again at most once without them.
      const users = new Map<string, Map<string, string>>();
      const refused: number[] = [];
      for (const [appId, indexes] of byApp) {
        const { ids, closed } = await resolveOrCreateUsers(
          trx,
          appId,
          indexes.map((i) => events[i]!),
        );
        users.set(appId, ids);
        for (const i of indexes) {
          const e = events[i]!;
          if (e.source === 'website' && !e.verified && closed.has(ids.get(e.userRef)!)) refused.push(i);
        }
      }
      if (refused.length > 0) {
        throw new ClosedToBrowsersError([...new Set(refused.map((i) => events[i]!.userRef))], refused);
      }
      for (const [appId, indexes] of byApp) {
        const userIds = users.get(appId)!;
        await writeAppEvents(trx, appId, indexes, events, results, userIds, this.triggers, outbox);
        const mine = visits.filter((v) => v.app_id === appId);
        if (mine.length > 0) {
          await insertVisits(
            trx,
            mine.map(({ userRef, ...v }) => ({ ...v, user_id: userIds.get(userRef)! })),
          );
        }
      }
      return results;
    });
    stopTimer?.();
    if (this.metrics) {
      const duplicates = results.filter((r) => r.duplicate).length;
      this.metrics.ingestEvents.inc({ outcome: 'written' }, events.length - duplicates);
      this.metrics.ingestEvents.inc({ outcome: 'duplicate' }, duplicates);
    }
    if (outbox.rows > 0) this.triggers?.fired();
    return results;
  }
}

/** Rejects the requests owning the refused events (each with its own identifiers); returns the others. */
function refuseClosed(group: PendingRequest[], err: ClosedToBrowsersError): PendingRequest[] {
  const refused = new Set(err.eventIndexes);
  const kept: PendingRequest[] = [];
  let offset = 0;
  for (const request of group) {
    const mine = request.events.filter((_, i) => refused.has(offset + i));
    offset += request.events.length;
    if (mine.length === 0) kept.push(request);
    else request.reject(new ClosedToBrowsersError([...new Set(mine.map((e) => e.userRef))]));
  }
  return kept;
}
