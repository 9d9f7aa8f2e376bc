// The event dictionary of an app: every event name it has tracked, with volumes, and the
// definitions people write (display name, description, category, property notes, archived).
// An entry is "defined" once it has a description.

import { timeZoneOf } from '../admin/organizations.js';
import type { ServiceContext } from '../context.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { isUuid } from '../ids.js';
import type { AppRow } from '../storage/tenancy.js';
import { addDays, localDate } from '../time.js';
import {
  type EventDefinitionRow,
  findEventDefinition,
  listEventDefinitions,
  updateEventDefinition,
} from './queries/event-dictionary.js';

/** First day of the 30 days ending today, in the organization's time zone. */
async function windowStart(ctx: ServiceContext, app: AppRow): Promise<string> {
  return addDays(localDate(ctx.clock(), await timeZoneOf(ctx, app.organization_id)), -29);
}

export async function eventDictionary(
  ctx: ServiceContext,
  app: AppRow,
  options: { includeArchived?: boolean; onlyUndefined?: boolean; search?: string; limit?: number; offset?: number },
): Promise<{ rows: EventDefinitionRow[]; total: number; hasMore: boolean }> {
  const limit = options.limit ?? 100;
  const offset = options.offset ?? 0;
  const { rows, total } = await listEventDefinitions(ctx.db, app.id, {
    includeArchived: options.includeArchived ?? false,
    onlyUndefined: options.onlyUndefined ?? false,
    search: options.search,
    limit,
    offset,
    since: await windowStart(ctx, app),
  });
  return { rows, total, hasMore: offset + rows.length < total };
}

export async function defineEvent(
  ctx: ServiceContext,
  app: AppRow,
  target: { event_id?: string; event_name?: string },
  patch: {
    display_name?: string | null;
    description?: string | null;
    category?: string | null;
    archived?: boolean;
    properties?: Record<string, string>;
  },
): Promise<EventDefinitionRow> {
  if ((target.event_id === undefined) === (target.event_name === undefined)) {
    throw new ValidationError('Name the event with exactly one of event_id and event_name.', [
      { path: '/event_id', message: 'give event_id or event_name, not both and not neither' },
    ]);
  }
  const since = await windowStart(ctx, app);
  const by = target.event_id !== undefined ? { id: target.event_id } : { name: target.event_name };
  if (by.id !== undefined && !isUuid(by.id)) throw new NotFoundError(`No event with id ${by.id} in this app.`);
  const found = await findEventDefinition(ctx.db, app.id, by, since);
  if (!found) {
    throw new NotFoundError(
      `No event ${target.event_id ?? `named "${target.event_name}"`} has been tracked in this app; only tracked events can be defined.`,
    );
  }
  const properties = patch.properties === undefined ? undefined : { ...found.properties, ...patch.properties };
  await updateEventDefinition(ctx.db, app.id, found.id, { ...patch, ...(properties ? { properties } : {}) });
  return (await findEventDefinition(ctx.db, app.id, { id: found.id }, since))!;
}
