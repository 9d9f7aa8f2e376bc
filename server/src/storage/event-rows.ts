// What one app's events write inside the event writer's transaction (event-writer.ts): insert_id
// dedup against the 7-day window, the event rows, trigger outbox rows for the events that may fire
// a trigger campaign, each user's counters and last activity, and the event dictionary with its
// daily volumes. Multi-row statements of at most ROWS_PER_STATEMENT rows, in a stable order.
import type { Knex } from 'knex';
import { uuidv7 } from '../ids.js';
import { chunks, ROWS_PER_STATEMENT } from './event-writer-users.js';
import { DEDUP_WINDOW_DAYS } from './events.js';
import { insertTriggerOutbox } from './ingested-rows.js';

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

export interface IngestResult {
  eventId: string;
  /** True when an event with the same insert_id was stored in the last 7 days; eventId is that event's. */
  duplicate: boolean;
}

/** Trigger campaigns: a cheap per-app check, and the wake-up of the worker after a commit. */
export interface TriggerHooks {
  mayTrigger(db: Knex, appId: string): Promise<boolean>;
  fired(): void;
}

/** Events whose client time is older than this never fire triggers. */
export const TRIGGER_MAX_AGE_MS = 3_600_000;

export async function writeAppEvents(
  trx: Knex.Transaction,
  appId: string,
  indexes: number[],
  events: IngestEvent[],
  results: IngestResult[],
  userIds: Map<string, string>,
  triggers: TriggerHooks | undefined,
  outbox: { rows: number },
): Promise<void> {
  const toStore = await dedupByInsertId(trx, appId, indexes, events, results);
  if (toStore.length === 0) return;
  toStore.sort((a, b) => a - b);
  await insertEvents(trx, appId, toStore, events, results, userIds);
  if (triggers) outbox.rows += await queueTriggerOccurrences(trx, appId, toStore, events, results, userIds, triggers);
  await addUserActivity(trx, appId, toStore, events, userIds);
  await addToEventDictionary(trx, appId, toStore, events);
}

/**
 * insert_id dedup: repeats inside this write first, then against the table (7-day window). Fills
 * `results` for every index and returns the indexes of the events to store.
 */
async function dedupByInsertId(
  trx: Knex.Transaction,
  appId: string,
  indexes: number[],
  events: IngestEvent[],
  results: IngestResult[],
): Promise<number[]> {
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
  if (firstByInsertId.size === 0) return toStore;
  const originals = await earlierEventIds(trx, appId, firstByInsertId, events, results);
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
  return toStore;
}

/** Claims each insert_id for this write; returns the event ids of those already stored within the window. */
async function earlierEventIds(
  trx: Knex.Transaction,
  appId: string,
  firstByInsertId: Map<string, number>,
  events: IngestEvent[],
  results: IngestResult[],
): Promise<Map<string, string>> {
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
  return originals;
}

async function insertEvents(
  trx: Knex.Transaction,
  appId: string,
  toStore: number[],
  events: IngestEvent[],
  results: IngestResult[],
  userIds: Map<string, string>,
): Promise<void> {
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
}

/** Outbox rows for the stored events a trigger campaign may answer; returns how many were written. */
async function queueTriggerOccurrences(
  trx: Knex.Transaction,
  appId: string,
  toStore: number[],
  events: IngestEvent[],
  results: IngestResult[],
  userIds: Map<string, string>,
  triggers: TriggerHooks,
): Promise<number> {
  const firing = toStore.filter((i) => {
    const e = events[i]!;
    return e.source !== 'demo' && !e.isBot && e.receivedAt.getTime() - e.createdAt.getTime() <= TRIGGER_MAX_AGE_MS;
  });
  if (firing.length === 0 || !(await triggers.mayTrigger(trx, appId))) return 0;
  let rows = 0;
  for (const chunk of chunks(firing, ROWS_PER_STATEMENT)) {
    rows += await insertTriggerOutbox(
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
  return rows;
}

/** Per-user counters and last activity. */
async function addUserActivity(
  trx: Knex.Transaction,
  appId: string,
  toStore: number[],
  events: IngestEvent[],
  userIds: Map<string, string>,
): Promise<void> {
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
}

/** The event dictionary and daily volumes. */
async function addToEventDictionary(
  trx: Knex.Transaction,
  appId: string,
  toStore: number[],
  events: IngestEvent[],
): Promise<void> {
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
