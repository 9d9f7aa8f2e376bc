// The query AST of the built-in natural-language engine: what a question in the controlled
// language (docs/analytics.md) means, before it is compiled to SQL.
import type { Unit } from '../time.js';

export type Measure =
  | { kind: 'count' }
  | { kind: 'users' }
  | { kind: 'new_users' }
  | { kind: 'sum' | 'avg' | 'max' | 'min'; property: string };

export type Comparison = '=' | '!=' | '>' | '<' | '>=' | '<=';

export interface Filter {
  property: string;
  op: Comparison;
  value: string;
}

/** Inclusive local dates, or a span of hours ending now. */
export type TimeRange = { kind: 'days'; from: string; to: string } | { kind: 'hours'; hours: number };

export type Grouping =
  | { kind: 'time'; unit: Unit }
  | { kind: 'event' }
  | { kind: 'user' }
  | { kind: 'property'; property: string };

export interface UserThreshold {
  op: Comparison;
  n: number;
  /** Count the users instead of listing them. */
  countOnly: boolean;
}

export interface NlQuery {
  measure: Measure;
  events: string[];
  filters: Filter[];
  range: TimeRange | null;
  groupBy: Grouping | null;
  /** Keep the N largest groups. */
  top: number | null;
  users: UserThreshold | null;
}
