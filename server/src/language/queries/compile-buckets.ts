// The buckets of a series period (hour, day, week or month), clipped to the period, as the
// natural-language compiler and its metric statements list them (like GET /v1/analytics/metrics).
import {
  addDays,
  addUnits as addLocal,
  label as labelOf,
  localTimestamp as localOf,
  truncate as truncateLocal,
} from '../../time.js';
import type { Bucket, Period, Query } from '../ast.js';
import { resolveAnchor } from '../periods.js';
import type { Sql } from './compile-parts.js';

/** The most buckets one series lists. */
const MAX_BUCKETS = 10_000;

export interface BucketRange {
  /** Label of the bucket (its natural start). */
  label: string;
  /** Natural start, clipped start and clipped end (naive local timestamps). */
  key: string;
  lo: string;
  hi: string;
}

/** The buckets of a period, clipped to it (like GET /v1/analytics/metrics). */
export function bucketsOf(sql: Sql, q: Query, unit: Bucket, fallbackStart: string | null): BucketRange[] {
  const cx = sql.cx;
  const resolve = (p: Period | undefined, end: boolean): string | null => {
    const a = end ? p?.to : p?.from;
    if (!a) return null;
    const r = resolveAnchor(a, cx.today, cx.now);
    return 'local' in r ? r.local : localOf(r.instant, cx.timeZone);
  };
  let lo = resolve(q.period, false) ?? (fallbackStart ? `${fallbackStart} 00:00:00` : `${cx.today} 00:00:00`);
  let hi = resolve(q.period, true) ?? `${addDays(cx.today, 1)} 00:00:00`;
  if (unit !== 'hour') {
    lo = `${lo.slice(0, 10)} 00:00:00`;
    if (hi.slice(11) !== '00:00:00') hi = `${addDays(hi.slice(0, 10), 1)} 00:00:00`;
  }
  const out: BucketRange[] = [];
  for (let key = truncateLocal(lo, unit); key < hi; key = addLocal(key, unit, 1)) {
    const next = addLocal(key, unit, 1);
    out.push({ label: labelOf(key, unit), key, lo: key < lo ? lo : key, hi: next > hi ? hi : next });
    if (out.length > MAX_BUCKETS) {
      throw new RangeError(
        `That period has more than ${MAX_BUCKETS} ${unit} buckets: choose a shorter period or a larger bucket.`,
      );
    }
  }
  return out;
}
