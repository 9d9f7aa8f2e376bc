// What one app's part of a group of the event writer (event-writer.ts) writes: one call of the
// database function tally_ingest (migrations/023-ingest-function.ts), which resolves, locks and
// creates the users, applies the identity rule of website events, dedups by insert_id (7-day
// window), stores the events, the trigger outbox rows and the visits, and adds to the per-user
// counters and the event dictionary, all in the one statement's transaction. This module turns the
// requests into the call's JSON and its answer back into each event's result.
import type { Knex } from 'knex';
import { uuidv7 } from '../ids.js';
import { DEDUP_WINDOW_DAYS } from './events.js';

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

/** A website visit, written with its request's page_view event; its user is the one `userRef` names. */
export interface VisitWrite {
  id: string;
  app_id: string;
  visitor_id: string;
  visit_url: string;
  path: string | null;
  referrer: string | null;
  page_title: string | null;
  ua: string | null;
  ip: string | null;
  signals: Record<string, unknown>;
  advanced_signals: Record<string, unknown> | null;
  is_bot: boolean;
  bot_reason: string | null;
  event_id: string | null;
  created_at: Date;
  userRef: string;
}

/** Trigger campaigns: a cheap per-app check, and the wake-up of the worker after a commit. */
export interface TriggerHooks {
  mayTrigger(db: Knex, appId: string): Promise<boolean>;
  fired(): void;
}

/** Events whose client time is older than this never fire triggers. */
export const TRIGGER_MAX_AGE_MS = 3_600_000;

/** One request's events and visits: stored all or none. */
export interface RequestRows {
  events: IngestEvent[];
  visits: VisitWrite[];
}

export interface AppPartResult {
  /** Each request's results, or null for a request refused by the identity rule. */
  results: (IngestResult[] | null)[];
  /** Of each refused request, the identifiers that named users closed to browsers. */
  refusedRefs: Map<number, string[]>;
  /** Trigger outbox rows written. */
  outbox: number;
}

interface FunctionAnswer {
  refused: number[];
  bad: number[];
  i: number[];
  ids: string[];
  dups: boolean[];
  outbox: number;
}

const DEDUP_WINDOW = `${DEDUP_WINDOW_DAYS} days`;

/** Stores one app's requests in one statement (its own transaction); each request is all or nothing. */
export async function writeAppPart(
  db: Knex,
  appId: string,
  requests: RequestRows[],
  triggers: TriggerHooks | undefined,
): Promise<AppPartResult> {
  const newUser = new Map<string, string>();
  const newDef = new Map<string, string>();
  const rows: unknown[] = [];
  const visits: unknown[] = [];
  const owner: { req: number; at: number }[] = [];
  let fires = false;
  requests.forEach((request, req) => {
    request.events.forEach((e, at) => {
      let user = newUser.get(e.userRef);
      if (!user) {
        user = uuidv7(e.createdAt.getTime());
        newUser.set(e.userRef, user);
      }
      let def = newDef.get(e.eventName);
      if (!def) {
        def = uuidv7();
        newDef.set(e.eventName, def);
      }
      const fire =
        e.source !== 'demo' && !e.isBot && e.receivedAt.getTime() - e.createdAt.getTime() <= TRIGGER_MAX_AGE_MS;
      fires ||= fire;
      rows.push({
        i: owner.length,
        req,
        ref: e.userRef,
        name: e.eventName,
        props: e.properties,
        ip: e.ip ?? null,
        ua: e.ua ?? null,
        insert_id: e.insertId ?? null,
        created_at: e.createdAt,
        received_at: e.receivedAt,
        id: e.id ?? uuidv7(e.receivedAt.getTime()),
        source: e.source,
        is_bot: e.isBot,
        verified: e.verified === true,
        fires: fire,
        new_user: user,
        new_def: def,
      });
      owner.push({ req, at });
    });
    for (const { userRef, app_id: _, ...v } of request.visits) visits.push({ ...v, req, ref: userRef });
  });
  const outbox = fires && triggers ? await triggers.mayTrigger(db, appId) : false;
  const { rows: answer } = await db.raw<{ rows: { r: FunctionAnswer }[] }>(
    'select tally_ingest(?::uuid, ?::jsonb, ?::jsonb, ?::boolean, ?::interval) as r',
    [appId, JSON.stringify(rows), JSON.stringify(visits), outbox, DEDUP_WINDOW],
  );
  const r = answer[0]!.r;
  const refused = new Set(r.refused);
  const results = requests.map((request, req) =>
    refused.has(req) ? null : new Array<IngestResult>(request.events.length),
  );
  r.i.forEach((i, k) => {
    const { req, at } = owner[i]!;
    results[req]![at] = { eventId: r.ids[k]!, duplicate: r.dups[k]! };
  });
  const refusedRefs = new Map<number, string[]>();
  for (const i of r.bad) {
    const { req, at } = owner[i]!;
    const refs = refusedRefs.get(req) ?? [];
    const ref = requests[req]!.events[at]!.userRef;
    if (!refs.includes(ref)) refs.push(ref);
    refusedRefs.set(req, refs);
  }
  return { results, refusedRefs, outbox: r.outbox };
}
