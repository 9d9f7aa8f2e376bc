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
import { uuidv7 } from '../ids.js';
import { chunks, ROWS_PER_STATEMENT, resolveOrCreateUsers } from './event-writer-users.js';
import { DEDUP_WINDOW_DAYS } from './events.js';
import { insertTriggerOutbox, insertVisits, type VisitRow } from './ingested-rows.js';

export interface IngestEvent {
  appId: string;
  /** The caller's identifier: a user's external id or one of its aliases. */
  userRef: string;
  eventName: string;
  properties: Record<string, unknown>;
  ip?: string | null;
  ua?: string | null;
  insertId?: string;
  /** The event's time (the client's timestamp, else receipt time). */
  createdAt: Date;
  receivedAt: Date;
  /** Where it came from: the REST API, a website (the SDK), or demo data. */
  source: 'api' | 'website' | 'demo';
  /** A website event whose sender proved the user's identity with a valid user_hash. */
  verified?: boolean;
  isBot: boolean;
  /** An id chosen by the caller (a page view's, so that its visit can point at it). */
  id?: string;
}

/** A visit to write with its request's events; its user is the one `userRef` names. */
export type VisitWrite = Omit<VisitRow, 'user_id' | 'received_at'> & { userRef: string };

export interface IngestResult {
  eventId: string;
  /** True when an event with the same insert_id was stored in the last 7 days; eventId is that event's. */
  duplicate: boolean;
}

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

/** Trigger campaigns: a cheap per-app check, and the wake-up of the worker after a commit. */
export interface TriggerHooks {
  mayTrigger(db: Knex, appId: string): Promise<boolean>;
  fired(): void;
}

/** Events whose client time is older than this never fire triggers. */
export const TRIGGER_MAX_AGE_MS = 3_600_000;

const MAX_EVENTS_PER_TRANSACTION = 5_000;

export class EventWriter {
  private pending: PendingRequest[] = [];
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly db: Knex,
    private readonly logger: Logger,
    private readonly triggers?: TriggerHooks,
  ) {}

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
        await this.flushGroup(this.pending.splice(0, take));
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

async function writeAppEvents(
  trx: Knex.Transaction,
  appId: string,
  indexes: number[],
  events: IngestEvent[],
  results: IngestResult[],
  userIds: Map<string, string>,
  triggers: TriggerHooks | undefined,
  outbox: { rows: number },
): Promise<void> {
  // insert_id dedup: repeats inside this write first, then against the table (7-day window).
  const firstByInsertId = new Map<string, number>();
  const toStore: number[] = [];
  for (const i of indexes) {
    const insertId = events[i]!.insertId;
    if (insertId === undefined) {
      toStore.push(i);
      results[i] = { eventId: events[i]!.id ?? uuidv7(events[i]!.receivedAt.getTime()), duplicate: false };
    } else if (!firstByInsertId.has(insertId)) {
      firstByInsertId.set(insertId, i);
      results[i] = { eventId: uuidv7(events[i]!.receivedAt.getTime()), duplicate: false };
    }
  }
  if (firstByInsertId.size > 0) {
    const claimed = new Set<string>();
    for (const chunk of chunks([...firstByInsertId], ROWS_PER_STATEMENT)) {
      const values = chunk.map(() => '(?::uuid, ?, ?::uuid, ?::timestamptz)').join(', ');
      const bindings = chunk.flatMap(([insertId, i]) => [appId, insertId, results[i]!.eventId, events[i]!.receivedAt]);
      const { rows } = await trx.raw(
        `insert into event_dedup (app_id, insert_id, event_id, received_at) values ${values}
         on conflict (app_id, insert_id) do update set event_id = excluded.event_id, received_at = excluded.received_at
         where event_dedup.received_at < excluded.received_at - interval '${DEDUP_WINDOW_DAYS} days'
         returning insert_id`,
        bindings,
      );
      for (const r of rows as { insert_id: string }[]) claimed.add(r.insert_id);
    }
    const repeats = [...firstByInsertId.keys()].filter((id) => !claimed.has(id));
    const originals = new Map<string, string>();
    for (const chunk of chunks(repeats, ROWS_PER_STATEMENT)) {
      const rows = await trx('event_dedup')
        .where({ app_id: appId })
        .whereIn('insert_id', chunk)
        .select('insert_id', 'event_id');
      for (const r of rows) originals.set(r.insert_id, r.event_id);
    }
    for (const [insertId, i] of firstByInsertId) {
      const original = originals.get(insertId);
      if (original) results[i] = { eventId: original, duplicate: true };
      else toStore.push(i);
    }
    for (const i of indexes) {
      const insertId = events[i]!.insertId;
      if (insertId !== undefined && results[i] === undefined) {
        results[i] = { eventId: results[firstByInsertId.get(insertId)!]!.eventId, duplicate: true };
      }
    }
  }
  if (toStore.length === 0) return;
  toStore.sort((a, b) => a - b);

  for (const chunk of chunks(toStore, ROWS_PER_STATEMENT)) {
    await trx('events').insert(
      chunk.map((i) => {
        const e = events[i]!;
        return {
          id: results[i]!.eventId,
          app_id: appId,
          user_id: userIds.get(e.userRef)!,
          event_name: e.eventName,
          properties: JSON.stringify(e.properties),
          ip: e.ip ?? null,
          ua: e.ua ?? null,
          source: e.source,
          is_bot: e.isBot,
          created_at: e.createdAt,
          received_at: e.receivedAt,
        };
      }),
    );
  }

  if (triggers) {
    const firing = toStore.filter((i) => {
      const e = events[i]!;
      return e.source !== 'demo' && !e.isBot && e.receivedAt.getTime() - e.createdAt.getTime() <= TRIGGER_MAX_AGE_MS;
    });
    if (firing.length > 0 && (await triggers.mayTrigger(trx, appId))) {
      for (const chunk of chunks(firing, ROWS_PER_STATEMENT)) {
        outbox.rows += await insertTriggerOutbox(
          trx,
          appId,
          chunk.map((i) => ({
            eventId: results[i]!.eventId,
            userId: userIds.get(events[i]!.userRef)!,
            eventName: events[i]!.eventName,
            eventAt: events[i]!.createdAt,
            receivedAt: events[i]!.receivedAt,
          })),
        );
      }
    }
  }

  // Per-user counters and last activity.
  const perUser = new Map<string, { n: number; last: Date }>();
  for (const i of toStore) {
    const e = events[i]!;
    const id = userIds.get(e.userRef)!;
    const agg = perUser.get(id);
    if (!agg) perUser.set(id, { n: 1, last: e.createdAt });
    else {
      agg.n++;
      if (e.createdAt > agg.last) agg.last = e.createdAt;
    }
  }
  const users = [...perUser].sort(([a], [b]) => (a < b ? -1 : 1));
  for (const chunk of chunks(users, ROWS_PER_STATEMENT)) {
    await trx.raw(
      `update users u set event_count = u.event_count + v.n,
         last_active = greatest(u.last_active, v.last), updated_at = now()
       from (values ${chunk.map(() => '(?::uuid, ?::bigint, ?::timestamptz)').join(', ')}) as v(id, n, last)
       where u.app_id = ?::uuid and u.id = v.id`,
      [...chunk.flatMap(([id, a]) => [id, a.n, a.last]), appId],
    );
  }

  // The event dictionary and daily volumes.
  const perName = new Map<string, { n: number; first: Date; last: Date; days: Map<string, number> }>();
  for (const i of toStore) {
    const e = events[i]!;
    const day = e.createdAt.toISOString().slice(0, 10);
    const agg = perName.get(e.eventName);
    if (!agg) perName.set(e.eventName, { n: 1, first: e.createdAt, last: e.createdAt, days: new Map([[day, 1]]) });
    else {
      agg.n++;
      if (e.createdAt < agg.first) agg.first = e.createdAt;
      if (e.createdAt > agg.last) agg.last = e.createdAt;
      agg.days.set(day, (agg.days.get(day) ?? 0) + 1);
    }
  }
  const names = [...perName].sort(([a], [b]) => (a < b ? -1 : 1));
  for (const chunk of chunks(names, ROWS_PER_STATEMENT)) {
    await trx.raw(
      `insert into event_definitions (id, app_id, event_name, first_seen, last_seen, volume)
       values ${chunk.map(() => '(?::uuid, ?::uuid, ?, ?::timestamptz, ?::timestamptz, ?::bigint)').join(', ')}
       on conflict (app_id, event_name) do update set
         first_seen = least(event_definitions.first_seen, excluded.first_seen),
         last_seen = greatest(event_definitions.last_seen, excluded.last_seen),
         volume = event_definitions.volume + excluded.volume`,
      chunk.flatMap(([name, a]) => [uuidv7(), appId, name, a.first, a.last, a.n]),
    );
  }
  const dayRows = names.flatMap(([name, a]) => [...a.days].sort().map(([day, n]) => [name, day, n] as const));
  for (const chunk of chunks(dayRows, ROWS_PER_STATEMENT)) {
    await trx.raw(
      `insert into event_daily_counts (app_id, event_name, day, count)
       values ${chunk.map(() => '(?::uuid, ?, ?::date, ?::bigint)').join(', ')}
       on conflict (app_id, event_name, day) do update set count = event_daily_counts.count + excluded.count`,
      chunk.flatMap(([name, day, n]) => [appId, name, day, n]),
    );
  }
}
