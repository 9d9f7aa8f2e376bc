// Searching an app's events (GET /mcp/events, and the MCP tool query_events): filters by name,
// user (external id or alias) and local days, newest first, one page at a time. Bot traffic is
// excluded, as in the SQL sandbox's `events` relation.

import { timeZoneOf } from '../admin/organizations.js';
import type { ServiceContext } from '../context.js';
import { type FieldError, NotFoundError, refuseIfAny, ValidationError } from '../errors.js';
import { countEvents, type EventFilter, type EventRecordRow, searchEvents } from '../storage/events.js';
import type { AppRow } from '../storage/tenancy.js';
import { findUserByIdentifier } from '../storage/users.js';
import { addDays, EARLIEST_DATE, isSupportedDate, LATEST_DATE } from '../time.js';

export interface EventSearch {
  eventName?: string;
  /** External id or alias. */
  userId?: string;
  /** Inclusive local days `YYYY-MM-DD`. */
  startDate?: string;
  endDate?: string;
  limit: number;
  offset: number;
}

export interface EventSearchPage {
  events: EventRecordRow[];
  total: number;
  limit: number;
  offset: number;
  hasMore: boolean;
}

/** Checks optional inclusive dates: real, supported, and in order. */
export function checkDateRange(startDate: string | undefined, endDate: string | undefined): void {
  const errors: FieldError[] = [];
  for (const [value, path] of [
    [startDate, '/query/start_date'],
    [endDate, '/query/end_date'],
  ] as const) {
    if (value !== undefined && !isSupportedDate(value)) {
      errors.push({ path, message: `must be a date between ${EARLIEST_DATE} and ${LATEST_DATE}` });
    }
  }
  refuseIfAny(errors);
  if (startDate !== undefined && endDate !== undefined && endDate < startDate) {
    throw new ValidationError('Invalid request: end_date is before start_date.', [
      { path: '/query/end_date', message: 'must not be before start_date' },
    ]);
  }
}

export async function searchAppEvents(ctx: ServiceContext, app: AppRow, search: EventSearch): Promise<EventSearchPage> {
  checkDateRange(search.startDate, search.endDate);
  const filter: EventFilter = { timeZone: await timeZoneOf(ctx, app.organization_id) };
  if (search.eventName !== undefined) filter.eventName = search.eventName;
  if (search.userId !== undefined) {
    const user = await findUserByIdentifier(ctx.db, app.id, search.userId);
    if (!user) throw new NotFoundError(`No user "${search.userId}" in app ${app.id}.`);
    filter.userId = user.id;
  }
  if (search.startDate !== undefined) filter.from = `${search.startDate} 00:00:00`;
  if (search.endDate !== undefined) filter.to = `${addDays(search.endDate, 1)} 00:00:00`;
  const timeoutMs = ctx.config.analyticsQueryTimeoutMs;
  const total = await countEvents(ctx.db, app.id, filter, timeoutMs);
  const events = search.offset >= total ? [] : await searchEvents(ctx.db, app.id, filter, search, timeoutMs);
  return {
    events,
    total,
    limit: search.limit,
    offset: search.offset,
    hasMore: search.offset + events.length < total,
  };
}
