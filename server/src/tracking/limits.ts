// Input rules shared by every way data comes in (REST, website, admin seeding): identifiers that
// would silently merge unrelated people are refused, and free-form properties are bounded.
import type { FieldError } from '../errors.js';

/**
 * Lengths of the event fields, as the contract declares them (EventInput in spec/); the
 * ingestion service applies them to events that do not come through HTTP too.
 */
export const EVENT_FIELD_LIMITS = { event_name: 255, user_id: 255, insert_id: 64, ip: 45, ua: 1024 } as const;

export const MAX_PROPERTY_KEYS = 255;
export const MAX_PROPERTIES_BYTES = 32 * 1024;
/** How far in the future a client timestamp may be (clock skew), in milliseconds. */
export const MAX_FUTURE_SKEW_MS = 60 * 60 * 1000;
/** The earliest event time accepted (backfill): the Unix epoch. */
export const EARLIEST_EVENT_TIME = Date.UTC(1970, 0, 1);

const JUNK_IDENTIFIERS = new Set(['', 'null', 'undefined', 'anonymous', 'nan', 'none', '[object object]']);

export function checkIdentifier(value: string, path: string, errors: FieldError[]): void {
  if (JUNK_IDENTIFIERS.has(value.trim().toLowerCase())) {
    errors.push({
      path,
      message: `"${value}" is a placeholder, not a user identifier; send the user's real id`,
    });
  }
}

export function checkProperties(value: Record<string, unknown> | undefined | null, path: string, errors: FieldError[]) {
  if (!value) return;
  const keys = Object.keys(value).length;
  if (keys > MAX_PROPERTY_KEYS) {
    errors.push({ path, message: `has ${keys} keys; at most ${MAX_PROPERTY_KEYS} are allowed` });
    return;
  }
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes > MAX_PROPERTIES_BYTES) {
    errors.push({ path, message: `is ${bytes} bytes as JSON; at most ${MAX_PROPERTIES_BYTES} are allowed` });
  }
}

/**
 * An event time: a real date, not before 1970, and (unless `future` allows it: generated demo
 * data, which may end later today) at most an hour ahead of now, for clock skew.
 */
export function checkTimestamp(value: Date, now: Date, path: string, errors: FieldError[], future = false): void {
  if (Number.isNaN(value.getTime())) errors.push({ path, message: 'is not a valid ISO 8601 date-time' });
  else if (!future && value.getTime() > now.getTime() + MAX_FUTURE_SKEW_MS) {
    errors.push({ path, message: 'is more than one hour in the future' });
  } else if (value.getTime() < EARLIEST_EVENT_TIME) {
    errors.push({ path, message: 'is before 1970-01-01T00:00:00Z, the earliest event time accepted' });
  }
}
