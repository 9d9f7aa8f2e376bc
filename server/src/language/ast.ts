// The typed query AST of the natural-language engine: what an analytics question or audience
// criteria mean, before they are compiled to SQL (language/queries/compile.ts). The built-in parser
// and a language model (through the JSON Schema in schema.ts) both produce it. Times stay
// relative ("last week") so a stored audience is re-evaluated against the clock each time.

/** Calendar units; weeks start on Monday, in the organization's time zone. */
export type CalendarUnit = 'day' | 'week' | 'month' | 'quarter' | 'year';
/** Buckets of a series. */
export type Bucket = 'hour' | 'day' | 'week' | 'month';

/**
 * A point in time, resolved at evaluation: the start of the calendar `unit` containing today,
 * moved by `offset` units and then by `months` months (rolling windows of months); midnight
 * starting a local `date`; or now minus `hours` hours.
 */
export type Anchor = { unit: CalendarUnit; offset: number; months?: number } | { date: string } | { hours: number };

/** The half-open interval [from, to); a missing end is open. */
export interface Period {
  from?: Anchor;
  to?: Anchor;
  /** How the period was written, normalised ("last week", "the last 7 days", "since 2026-03-15"). */
  label: string;
  /** Set when the period is exactly one calendar unit (then "the next period" is the next unit). */
  unit?: CalendarUnit;
}

export type Op =
  | 'eq'
  | 'neq'
  | 'in'
  | 'not_in'
  | 'gt'
  | 'gte'
  | 'lt'
  | 'lte'
  | 'between'
  | 'contains'
  | 'not_contains'
  | 'starts_with'
  | 'ends_with'
  | 'exists'
  | 'not_exists';

export type Scalar = string | number | boolean;

/** A test on one property: of the event (event filters) or of the user (user conditions). */
export interface Filter {
  /**
   * Property key; on users also the columns `email`, `phone` and `user_id`. `$revenue` is the
   * money of an event (`revenue`, else `amount`); on events, `$hour` (0-23) and `$weekday` (1 Monday
   * to 7 Sunday) are the local hour and day of the week of the event's time.
   */
  key: string;
  op: Op;
  /** One value (eq, neq, comparisons, contains...), several (in, not_in), two (between, inclusive) or none (exists). */
  values: Scalar[];
}

/** Bounds on a number (`gt` more than, `gte` at least, `lt` less than, `lte` at most). */
export interface Bounds {
  gt?: number;
  gte?: number;
  lt?: number;
  lte?: number;
}

/** Who is counted: a condition on a user, true or false for each user of the app. */
export type Condition =
  | { type: 'all' }
  | { type: 'and' | 'or'; of: Condition[] }
  | { type: 'not'; of: Condition }
  /**
   * Did one of `events` (any event when empty) matching `filters`, within `period`: at least
   * once, or a number of times within `times`, or for a total of the property `total.key`
   * within `total` (e.g. spent over $100).
   */
  | {
      type: 'did';
      events: string[];
      filters: Filter[];
      period?: Period;
      times?: Bounds;
      total?: Bounds & { key: string };
    }
  /**
   * Did `first`, and later `next` (after that event, within `withinHours` of it when given):
   * "added to cart then purchased", "bought within 7 days of signing up".
   */
  | {
      type: 'sequence';
      first: Extract<Condition, { type: 'did' }>;
      next: Extract<Condition, { type: 'did' }>;
      withinHours?: number;
    }
  /** No event within the period, and first seen before it started. */
  | { type: 'inactive'; period: Period }
  /** First seen (the earliest event or profile) within the period. */
  | { type: 'first_seen'; period: Period }
  | { type: 'user'; filter: Filter };

export type MetricName = 'dau' | 'wau' | 'mau' | 'retention' | 'churn' | 'conversion' | 'arpu';
export type Aggregate = 'sum' | 'avg' | 'min' | 'max' | 'median';

/** What is counted or summed over a set of events. */
export type Measure =
  /** Number of events. */
  | { kind: 'events' }
  /** Distinct users among the events; without events or period, users of the app matching `segment`. */
  | { kind: 'users' }
  /** Users first seen in the period. */
  | { kind: 'new_users' }
  | { kind: 'aggregate'; fn: Aggregate; key: string }
  /** The metrics of GET /v1/analytics/metrics, same definitions. */
  | { kind: 'metric'; metric: MetricName }
  /** Of the users whose first event falls in the period, the percent active on the Nth day after their first day. */
  | { kind: 'retention_day'; day: number }
  /** One count divided by another (times 100 when `percent`). */
  | { kind: 'ratio'; numerator: Part; denominator: Part; percent: boolean }
  /**
   * One figure over users' own figures: the largest, smallest, average or median of each user's
   * number of events (`of: 'events'`) or total of `key` (`of: 'sum'`), over the users with such events.
   */
  | { kind: 'per_user'; fn: 'max' | 'min' | 'avg' | 'median'; of: 'events' | 'sum'; key?: string }
  /** Of the users who did `from` in the period, the percent who also did `to` in it. */
  | { kind: 'funnel'; from: EventSet; to: EventSet };

/** Events by name (empty: any event) with filters on their properties. */
export interface EventSet {
  events: string[];
  filters: Filter[];
}

/** One side of a ratio. */
export interface Part extends EventSet {
  measure: 'events' | 'users' | 'sum';
  /** For `sum`: the property summed. */
  key?: string;
  /** Users counted from the app's user list (no event condition), restricted by `segment`. */
  segment?: Condition;
}

export type Dimension =
  | { kind: 'event_name' }
  | { kind: 'event_property'; key: string }
  | { kind: 'user_property'; key: string }
  | { kind: 'user' }
  /** One row per bucket with data (for "which day had the most"); series use `bucket`. */
  | { kind: 'time'; unit: Bucket }
  /**
   * The local hour of the day (0-23), the day of the week (Monday first) or weekend against
   * weekdays (`first` is listed first), in the organization's time zone.
   */
  | { kind: 'time_part'; part: 'hour' | 'weekday' | 'day_type'; first?: 'weekend' | 'weekday' };

/** An analytics question. */
export interface Query {
  measure: Measure;
  /** The events measured (ignored by metrics, new_users, ratios and funnels). */
  events: EventSet;
  /** Only users for whom this holds (user properties, past behaviour). */
  segment?: Condition;
  period?: Period;
  /** A series: one row per bucket of the period, empty buckets included. */
  bucket?: Bucket;
  /** With `bucket`: one figure, the average of the series' values ("average daily revenue"). */
  average?: boolean;
  /** A breakdown: one row per value. */
  groupBy?: Dimension;
  /** Breakdown values as percent of their total. */
  percent?: boolean;
  /** Only groups whose value is within these bounds ("users with more than 10 events"). */
  having?: Bounds;
  order?: 'desc' | 'asc';
  limit?: number;
  /** Two or more periods compared: one row per period (replaces `period`). */
  compare?: Period[];
  /**
   * Two or more segments compared ("premium vs free", "iOS vs Android"): one row per side, in the
   * order written; each side adds its filters on the events measured, or its condition on users.
   */
  versus?: Side[];
}

/** One side of a comparison of segments. */
export interface Side {
  label: string;
  filters: Filter[];
  segment?: Condition;
}

/** Audience criteria. */
export interface Segment {
  version: 2;
  where: Condition;
}
