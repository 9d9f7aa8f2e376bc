// The one way events come in: REST events and batches, website events and visits (each with its
// page_view), and demo data all call `ingest`, which applies every ingestion policy in one place
// before the event writer stores anything:
//   1. the input rules: identifiers that are placeholders, characters (NUL, lone surrogates), the
//      contract's field lengths, property size and nesting, event times (1970 to an hour ahead);
//   2. the app's ip_mode (full, truncated, or no IP stored);
//   3. bot classification (website traffic only: a visit's verdict, or its visitor's latest);
//   4. identity verification of website events: without a valid user_hash they may only reach
//      users open to browsers, checked by the writer on the rows it resolves (403 otherwise);
//   5. dedup by insert_id and the event dictionary (in the writer, storage/event-writer.ts).
// A request's events are all or nothing: any bad one refuses the whole request, naming each.

import type { ServiceContext } from '../context.js';
import { type FieldError, ServiceUnavailableError, ValidationError } from '../errors.js';
import { codePointLength, inputViolations, MAX_REPORTED, textViolation } from '../input-rules.js';
import {
  ClosedToBrowsersError,
  type IngestEvent,
  IngestQueueFullError,
  type IngestResult,
  type VisitWrite,
} from '../storage/event-writer.js';
import type { AppRow } from '../storage/tenancy.js';
import { notOpenToBrowsers } from './browser-writes.js';
import { checkIdentifier, checkProperties, checkTimestamp, EVENT_FIELD_LIMITS } from './limits.js';
import { latestVisitIsBot } from './queries/visits.js';

export type { IngestResult };

/** One event as callers give it (the contract's EventInput, and the same fields from elsewhere). */
export interface IncomingEvent {
  user_id: string;
  event_name: string;
  properties?: Record<string, unknown>;
  insert_id?: string;
  /** The event's time; receipt time when absent. */
  timestamp?: string | Date;
  ip?: string | null;
  ua?: string | null;
  /** An id chosen by the caller (a page view's, so its visit can point at it). */
  id?: string;
}

export interface Ingestion {
  app: Pick<AppRow, 'id' | 'ip_mode'>;
  source: 'api' | 'website' | 'demo';
  events: IncomingEvent[];
  /** Where the events are in the request, for error paths: `/body` (one) or `/body/events` (a batch). */
  at: '/body' | '/body/events' | '/events';
  /** The request's own names of event fields, for error paths (the website's `visitor_id`). */
  names?: { user_id?: string };
  /** The sender's address and agent, used for events that carry none (website requests). */
  caller?: { ip: string | null; ua: string | null };
  /** Website requests: the sender proved the visitor's identity with a valid user_hash. */
  verified?: boolean;
  /** Bot traffic: a visit's verdict, or `visitor` to follow the visitor's latest visit. */
  bot?: boolean | 'visitor';
  /** A visit stored in the same transaction as the events (its page_view). */
  visit?: VisitWrite;
  /** Receipt time (the context's clock when absent). */
  now?: Date;
}

/** The IP as the app's privacy setting allows it to be stored. */
export function storedIp(app: Pick<AppRow, 'ip_mode'>, ip: string | null | undefined): string | null {
  if (!ip || app.ip_mode === 'none') return null;
  if (app.ip_mode !== 'truncate') return ip;
  const v4 = /^(?:::ffff:)?(\d+\.\d+\.\d+)\.\d+$/i.exec(ip);
  if (v4) return `${v4[1]}.0`;
  // IPv6: keep the first three groups (a /48).
  const [head = '', tail] = ip.split('::');
  const first = head ? head.split(':') : [];
  const last = tail ? tail.split(':') : [];
  const groups = tail === undefined ? first : [...first, ...Array(8 - first.length - last.length).fill('0'), ...last];
  return `${groups.slice(0, 3).join(':')}::`;
}

/** Every violation of the input rules in these events, with paths under `at`. */
export function eventViolations(
  events: IncomingEvent[],
  at: string,
  now: Date,
  names: { user_id?: string } = {},
  /** Times ahead of now are allowed (generated demo data). */
  future = false,
): FieldError[] {
  const userId = names.user_id ?? 'user_id';
  const errors: FieldError[] = [];
  const text = (value: string | null | undefined, path: string, max: number) => {
    if (value === null || value === undefined) return;
    const problem = textViolation(value);
    if (problem) errors.push({ path, message: problem });
    else if (value.length > max && codePointLength(value) > max)
      errors.push({ path, message: `must NOT have more than ${max} characters` });
  };
  for (let i = 0; i < events.length && errors.length < MAX_REPORTED; i++) {
    const e = events[i]!;
    const path = at === '/body' ? at : `${at}/${i}`;
    text(e.event_name, `${path}/event_name`, EVENT_FIELD_LIMITS.event_name);
    text(e.user_id, `${path}/${userId}`, EVENT_FIELD_LIMITS.user_id);
    text(e.insert_id, `${path}/insert_id`, EVENT_FIELD_LIMITS.insert_id);
    text(e.ip, `${path}/ip`, EVENT_FIELD_LIMITS.ip);
    text(e.ua, `${path}/ua`, EVENT_FIELD_LIMITS.ua);
    checkIdentifier(e.user_id, `${path}/${userId}`, errors);
    errors.push(...inputViolations(e.properties, `${path}/properties`, { freeForm: true }));
    checkProperties(e.properties, `${path}/properties`, errors);
    if (e.timestamp !== undefined) {
      const when = e.timestamp instanceof Date ? e.timestamp : new Date(e.timestamp);
      checkTimestamp(when, now, `${path}/timestamp`, errors, future);
    }
  }
  return errors.slice(0, MAX_REPORTED);
}

function refusal(ingestion: Ingestion, errors: FieldError[]): ValidationError {
  if (ingestion.at === '/body') {
    const what = ingestion.source === 'website' ? 'request' : 'event';
    return new ValidationError(`Invalid ${what}: ${errors[0]!.path} ${errors[0]!.message}.`, errors);
  }
  const bad = new Set(errors.map((e) => e.path.split('/').at(ingestion.at === '/events' ? 2 : 3)));
  const n = ingestion.events.length;
  return new ValidationError(
    `${bad.size} of ${n} events are invalid (${[...bad].map((i) => `#${i}`).join(', ')}); nothing was stored.`,
    errors,
  );
}

/** Applies every ingestion policy and stores the events (and the visit); resolves once committed. */
export async function ingest(
  ctx: Pick<ServiceContext, 'db' | 'ingestor' | 'clock'>,
  ingestion: Ingestion,
): Promise<IngestResult[]> {
  const now = ingestion.now ?? ctx.clock();
  const errors = eventViolations(ingestion.events, ingestion.at, now, ingestion.names, ingestion.source === 'demo');
  if (errors.length > 0) throw refusal(ingestion, errors);
  const { app, caller } = ingestion;
  let isBot = false;
  if (ingestion.source === 'website') {
    if (ingestion.bot === 'visitor') {
      const refs = new Set(ingestion.events.map((e) => e.user_id));
      // A visitor whose visits are classified as bots sends bot traffic (one visitor per request).
      isBot = refs.size === 1 ? ((await latestVisitIsBot(ctx.db, app.id, [...refs][0]!)) ?? false) : false;
    } else isBot = ingestion.bot === true;
  }
  const events: IngestEvent[] = ingestion.events.map((e) => ({
    appId: app.id,
    userRef: e.user_id,
    eventName: e.event_name,
    properties: e.properties ?? {},
    ip: storedIp(app, e.ip ?? caller?.ip),
    ua: e.ua ?? caller?.ua ?? null,
    insertId: e.insert_id,
    createdAt: e.timestamp === undefined ? now : e.timestamp instanceof Date ? e.timestamp : new Date(e.timestamp),
    receivedAt: now,
    source: ingestion.source,
    ...(ingestion.source === 'website' && ingestion.verified ? { verified: true } : {}),
    isBot,
    ...(e.id ? { id: e.id } : {}),
  }));
  const visits = ingestion.visit ? [{ ...ingestion.visit, ip: storedIp(app, ingestion.visit.ip) }] : [];
  try {
    return await ctx.ingestor.submit(events, visits);
  } catch (err) {
    if (err instanceof ClosedToBrowsersError) throw notOpenToBrowsers(err.userRefs[0]!);
    if (err instanceof IngestQueueFullError) {
      throw new ServiceUnavailableError(
        'Tally is receiving events faster than its database stores them right now; nothing of this request was stored. Send it again after the seconds in Retry-After.',
        1,
      );
    }
    throw err;
  }
}
