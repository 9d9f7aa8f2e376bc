// How large a value each allowed function, operator and cast can return, given how large its inputs
// can be (size.ts walks the query with these). Sizes are upper bounds, in bytes of the
// value's text form; Infinity means no bound the query itself enforces. A function of the
// allow-lists without a rule here is refused (test/unit/sandbox-size.test.ts keeps them in step).

/** The largest value a sandbox query may build: larger ones are refused before the query runs. */
export const MAX_VALUE_BYTES = 16 * 1024 * 1024;
/** The text of the widest numeric PostgreSQL accepts: 131,072 digits before the point, 16,383 after. */
export const NUMERIC_BYTES = 131_072 + 16_383 + 2;
const NUMBER = 24; // integers and floats
const TIME = 80; // dates, times, timestamps and intervals
const BOOL = 5;
const UUID = 36;
/** A stored property object: at most what one request can carry (its body is capped at 1 MB). */
const STORED_JSON = 1024 * 1024;
/** A stored string of the contract: its maximum length in characters, at 4 bytes each. */
const chars = (n: number) => 4 * n;

/** Upper bounds of the columns of the sandbox relations. */
export const COLUMN_BYTES: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  events: { id: UUID, user_id: chars(255), event_name: chars(255), properties: STORED_JSON, created_at: TIME },
  users: {
    id: UUID,
    user_id: chars(255),
    email: chars(320),
    phone: chars(32),
    properties: STORED_JSON,
    origin: STORED_JSON,
    created_at: TIME,
    last_active: TIME,
    event_count: NUMBER,
  },
};

/** One argument of a call: its size bound, and its value when the query writes it as a constant. */
export interface Arg {
  size: number;
  /** An integer written in the query (`5`, `-2`, `'5'::int`). */
  int?: number;
}

/** The rows an aggregate or a window function may see (Infinity: no bound in the query). */
export type SizeRule = (args: Arg[], rows: number, orderBy: number) => number;

const sum = (args: Arg[]) => args.reduce((n, a) => n + a.size, 0);
const first = (args: Arg[]) => args[0]?.size ?? 0;
const maxOf = (args: Arg[]) => Math.max(0, ...args.map((a) => a.size));
const fixed =
  (n: number): SizeRule =>
  () =>
    n;
/** An array's elements: at most one per two bytes of its text form (`{a,b}`), plus one. */
const elements = (arraySize: number) => arraySize / 2 + 1;
/** The text form of a value quoted inside an array, a row or JSON (quotes and escapes). */
const quoted = (size: number) => 2 * size + 3;
const json = (size: number) => 6 * size + 2; // a control character becomes \u0001
/** A count written in the query, or Infinity when the query computes it. */
const literal = (a: Arg | undefined) => (a?.int === undefined ? Number.POSITIVE_INFINITY : Math.max(0, a.int));

const rules: Record<string, SizeRule> = {};
const define = (names: string, rule: SizeRule) => {
  for (const name of names.trim().split(/\s+/)) rules[name] = rule;
};

// Aggregates and window functions.
define('count regr_count row_number rank dense_rank ntile width_bucket scale min_scale', fixed(NUMBER));
define('percent_rank cume_dist corr covar_pop covar_samp regr_slope regr_intercept regr_r2', fixed(NUMBER));
define('bool_and bool_or every', fixed(BOOL));
define('sum avg stddev stddev_pop stddev_samp variance var_pop var_samp', fixed(NUMERIC_BYTES));
define('min max any_value mode first_value last_value nth_value', first);
define('lag lead', (a) => Math.max(first(a), a[2]?.size ?? 0));
// percentile_cont(fractions) WITHIN GROUP (ORDER BY x): one value per fraction.
define('percentile_cont percentile_disc', (a, _rows, order) => elements(first(a)) * (Math.max(order, NUMBER) + 3));
define('string_agg', (a, rows) => rows * (first(a) + (a[1]?.size ?? 0)));
define('array_agg', (a, rows) => rows * quoted(first(a)) + 2);
define('json_agg jsonb_agg', (a, rows) => rows * (json(first(a)) + 2) + 2);
define('json_object_agg jsonb_object_agg', (a, rows) => rows * (json(first(a)) + json(a[1]?.size ?? 0) + 4) + 2);

// Dates and times.
define('now date_trunc date_part extract age to_date to_timestamp make_date make_time make_interval', fixed(TIME));
define('make_timestamp make_timestamptz timezone date_bin justify_days justify_hours justify_interval', fixed(TIME));
define('statement_timestamp transaction_timestamp clock_timestamp', fixed(TIME));
define('isfinite overlaps starts_with is_normalized', fixed(BOOL));
// A template pattern prints at most a few times its own length ("J" is seven digits).
define('to_char', (a) => 16 * (a[1]?.size ?? 0) + 64);

// Numbers: any of them may be numeric, whose text can reach NUMERIC_BYTES.
define('abs round ceil ceiling floor trunc sign sqrt cbrt power pow exp ln log log10 mod div', fixed(NUMERIC_BYTES));
define('degrees radians to_number gcd lcm trim_scale', fixed(NUMERIC_BYTES));
define('pi random', fixed(NUMBER));
define('length char_length character_length octet_length bit_length position strpos ascii', fixed(NUMBER));
define('array_length cardinality array_position array_lower array_upper num_nonnulls num_nulls', fixed(NUMBER));
define('jsonb_array_length json_array_length', fixed(NUMBER));
define('regexp_like regexp_count regexp_instr', fixed(NUMBER));

// Text.
define('lower upper initcap', (a) => 3 * first(a)); // a few letters change case into three bytes
define('substr trim btrim ltrim rtrim split_part reverse', first);
// left(s, n) and right(s, n): n characters, or all but -n of them.
define('left right', (a) => ((a[1]?.int ?? -1) >= 0 ? Math.min(first(a), 4 * a[1]!.int!) : first(a)));
define('md5', fixed(32));
define('to_hex', fixed(16));
define('chr', fixed(4));
define('translate', (a) => 4 * first(a)); // one character for another, up to four bytes each
define('concat', sum);
define('concat_ws', (a) => sum(a.slice(1)) + Math.max(0, a.length - 2) * first(a));
// Every occurrence of `from` (at least one character) may become `to`.
define('replace', (a) => first(a) * Math.max(1, a[2]?.size ?? 0) + first(a));
define('overlay', (a) => first(a) + (a[1]?.size ?? 0));
define('quote_literal quote_nullable quote_ident', (a) => quoted(first(a)));
define('normalize', (a) => 18 * first(a)); // a compatibility decomposition can spell one character as 18
// The result is exactly n characters: bounded only when the query writes n.
define('lpad rpad', (a) => 4 * literal(a[1]));
define('repeat', (a) => first(a) * literal(a[1]));

// JSON. Its text escapes control characters six to one, and a subscript or key path never grows it.
define('jsonb_extract_path jsonb_extract_path_text json_extract_path json_extract_path_text', first);
define('jsonb_typeof json_typeof', fixed(16));
define('jsonb_array_elements jsonb_array_elements_text json_array_elements json_array_elements_text', first);
define('jsonb_each jsonb_each_text json_each json_each_text jsonb_object_keys json_object_keys', first);
define('jsonb_build_object jsonb_build_array json_build_object json_build_array', (a) =>
  a.reduce((n, x) => n + json(x.size) + 2, 2),
);
define('to_jsonb to_json row_to_json', (a) => json(first(a)));
define('jsonb_strip_nulls', first);
// Pretty printing indents every element by its depth, and the depth can grow with the input.
define('jsonb_pretty', (a) => first(a) * (2 * first(a) + 1));
define('jsonb_set jsonb_insert', (a) => first(a) + (a[1]?.size ?? 0) + json(a[2]?.size ?? 0));

// Arrays.
define('unnest array_remove', first);
define('array_positions', (a) => elements(first(a)) * (NUMBER + 1) + 2);
define('array_to_string', (a) => first(a) + elements(first(a)) * ((a[1]?.size ?? 0) + (a[2]?.size ?? 0)));
define('string_to_array', (a) => elements(2 * first(a)) * 5 + 2 * first(a));
define('array_append', (a) => first(a) + quoted(a[1]?.size ?? 0));
define('array_prepend', (a) => (a[1]?.size ?? 0) + quoted(first(a)));
define('array_cat', sum);
define('array_replace', (a) => first(a) + elements(first(a)) * quoted(a[2]?.size ?? 0));

// Refused in embedded mode (rules.ts UNBOUNDED_FUNCTIONS); these bound their values only.
define('generate_series', (a) => Math.max(maxOf(a), TIME));
define('regexp_substr substring regexp_split_to_table', first);
// Each match becomes the replacement, whose \N references repeat (part of) the input.
define('regexp_replace', (a) => first(a) + (a[2]?.size ?? 0) * (2 * first(a) + 2));
// One capture per group of the pattern, each at most the whole input.
define('regexp_match regexp_matches', (a) => elements(a[1]?.size ?? 0) * quoted(first(a)) + 2);
define('regexp_split_to_array', (a) => elements(2 * first(a)) * 5 + 2 * first(a));
define('similar_to_escape', (a) => 2 * first(a) + 8);

export const SIZE_RULES: Readonly<Record<string, SizeRule>> = rules;

/** Functions that aggregate rows: their values grow with the rows they see. */
export const AGGREGATES = new Set(
  `count sum avg min max stddev stddev_pop stddev_samp variance var_pop var_samp bool_and bool_or every any_value
  string_agg array_agg json_agg jsonb_agg json_object_agg jsonb_object_agg percentile_cont percentile_disc mode
  corr covar_pop covar_samp regr_slope regr_intercept regr_count regr_r2`
    .trim()
    .split(/\s+/),
);

/** Operators by what they return: a truth value, a part of their left operand, or a number. */
const COMPARISONS = new Set('= <> != < > <= >= ~~ !~~ ~~* !~~* @> <@ ? ?| ?& && ~ ~* !~ !~*'.split(' '));
const PARTS = new Set(['->', '->>', '#>', '#>>', '-', '#-']);

export function operatorSize(op: string, left: number | undefined, right: number): number {
  if (left === undefined) return Math.max(right + 1, NUMBER); // prefix -, @, |/, ~
  if (COMPARISONS.has(op)) return BOOL;
  if (op === '||') return left + right;
  // jsonb minus a key, a path or an array element is never larger than the jsonb; numbers fit NUMERIC_BYTES.
  if (PARTS.has(op)) return Math.max(left, NUMERIC_BYTES);
  return NUMERIC_BYTES;
}

/** Longest char(n)/varchar(n) a query may cast to (char pads every value to n characters). */
export const MAX_CHAR_LENGTH = 1_000;

/** The size of a value cast to a type (scalar or array), from the size of what is cast. */
export function castSize(type: string, typmod: number | undefined, array: boolean, from: number): number {
  const scalar = (size: number): number => {
    switch (type) {
      case 'text':
        return size;
      case 'varchar':
        return typmod === undefined ? size : Math.min(size, chars(typmod));
      case 'char':
      case 'bpchar':
        return typmod === undefined ? size : Math.max(Math.min(size, chars(typmod)), chars(typmod));
      case 'numeric':
      case 'decimal':
        return NUMERIC_BYTES;
      case 'bool':
      case 'boolean':
        return BOOL;
      case 'uuid':
        return UUID;
      case 'json':
      case 'jsonb':
        return 2 * size + 2; // printed jsonb adds a space after every colon and comma
      case 'date':
      case 'time':
      case 'timetz':
      case 'timestamp':
      case 'timestamptz':
      case 'interval':
        return TIME;
      default:
        return NUMBER;
    }
  };
  if (!array) return scalar(from);
  // Every element is cast on its own: a numeric array of short literals can print long numbers.
  return type === 'text' || type === 'varchar' ? quoted(from) : elements(from) * quoted(scalar(from)) + 2;
}

/** The size of a numeric constant as text (`1e100000` is 100,001 digits). */
export function numericConstantSize(text: string): number {
  const m = /^[+-]?(\d*)\.?(\d*)[eE]([+-]?\d+)$/.exec(text);
  if (!m) return text.length;
  const exponent = Math.abs(Number(m[3]));
  return Math.min(NUMERIC_BYTES, m[1]!.length + m[2]!.length + exponent + 2);
}

/** Bytes in words (16 MB, 1.2 GB). */
export function describeBytes(n: number): string {
  if (!Number.isFinite(n)) return 'no bound';
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  if (i === units.length - 1 && v >= 1024) return 'more than a petabyte';
  return `${v >= 10 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}
