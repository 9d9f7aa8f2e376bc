// The allow-lists of the SQL sandbox's checker (check.ts): the relations and their
// columns, functions, operators, types and the parse-tree nodes that carry no behaviour of their
// own; and how PostgreSQL names an unnamed output column (so `alias.column` can be checked).

const words = (s: string) => new Set(s.trim().split(/\s+/));

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const sval = (n: unknown): string | undefined => ((n as Json | undefined)?.String as Json | undefined)?.sval as string;
const names = (list: unknown): string[] => ((list as unknown[] | undefined) ?? []).map((n) => sval(n) ?? '');

/** The relations the sandbox offers, with their columns. */
export const SANDBOX_RELATIONS: Readonly<Record<string, readonly string[]>> = {
  events: ['id', 'user_id', 'event_name', 'properties', 'created_at'],
  users: ['id', 'user_id', 'email', 'phone', 'properties', 'origin', 'created_at', 'last_active', 'event_count'],
};

/**
 * Functions allowed everywhere (bare or pg_catalog-qualified). None runs SQL text or touches the
 * server; those that can build large values from small input (replace, lpad, string_agg, ...) are
 * bounded by the checker's size pass (size.ts), which refuses a query when it cannot bound them.
 */
export const ALLOWED_FUNCTIONS = words(`
  count sum avg min max stddev stddev_pop stddev_samp variance var_pop var_samp bool_and bool_or every any_value
  string_agg array_agg json_agg jsonb_agg json_object_agg jsonb_object_agg percentile_cont percentile_disc mode
  corr covar_pop covar_samp regr_slope regr_intercept regr_count regr_r2
  row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
  now date_trunc date_part extract age to_char to_date to_timestamp make_date make_time make_interval
  make_timestamp make_timestamptz timezone date_bin justify_days justify_hours justify_interval isfinite
  statement_timestamp transaction_timestamp clock_timestamp overlaps
  abs round ceil ceiling floor trunc sign sqrt cbrt power pow exp ln log log10 mod div width_bucket
  pi degrees radians random to_number gcd lcm scale min_scale trim_scale
  lower upper length char_length character_length octet_length bit_length substr trim btrim ltrim rtrim
  concat concat_ws replace repeat lpad rpad left right split_part position strpos starts_with initcap reverse md5 translate
  ascii chr quote_literal quote_ident quote_nullable to_hex normalize is_normalized overlay
  jsonb_extract_path jsonb_extract_path_text json_extract_path json_extract_path_text jsonb_typeof json_typeof
  jsonb_array_length json_array_length jsonb_array_elements jsonb_array_elements_text json_array_elements
  json_array_elements_text jsonb_each jsonb_each_text json_each json_each_text jsonb_object_keys json_object_keys
  jsonb_build_object jsonb_build_array json_build_object json_build_array to_jsonb to_json jsonb_strip_nulls
  jsonb_pretty jsonb_set jsonb_insert row_to_json
  array_length cardinality unnest array_position array_positions array_to_string string_to_array
  array_append array_prepend array_cat array_remove array_replace array_lower array_upper
  num_nonnulls num_nulls
`);

/** Allowed on PostgreSQL, where a statement timeout bounds them; refused in embedded mode. */
export const UNBOUNDED_FUNCTIONS = words(`
  generate_series regexp_replace regexp_match regexp_matches regexp_like regexp_count regexp_instr regexp_substr
  regexp_split_to_table regexp_split_to_array substring similar_to_escape
`);

/** Output columns of the set-returning functions above that return rows (OUT parameters). */
export const FUNCTION_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  jsonb_each: ['key', 'value'],
  jsonb_each_text: ['key', 'value'],
  json_each: ['key', 'value'],
  json_each_text: ['key', 'value'],
  jsonb_array_elements: ['value'],
  jsonb_array_elements_text: ['value'],
  json_array_elements: ['value'],
  json_array_elements_text: ['value'],
};
/** Set-returning functions of one unnamed column: in FROM it is named after the alias, else the function. */
export const SCALAR_SET_FUNCTIONS = words(
  'unnest generate_series regexp_split_to_table regexp_matches jsonb_object_keys json_object_keys',
);

/**
 * Names of functions that run SQL text, touch the server or change settings. They are never on the
 * allow-list; this list also refuses them in field-selection position (`x.name`) whatever the
 * checker believes the columns of x to be, as a second guard.
 */
export const FORBIDDEN_NAMES = words(`
  ts_stat ts_rewrite query_to_xml query_to_xmlschema query_to_xml_and_xmlschema cursor_to_xml cursor_to_xmlschema
  table_to_xml table_to_xmlschema table_to_xml_and_xmlschema schema_to_xml schema_to_xmlschema
  schema_to_xml_and_xmlschema database_to_xml database_to_xmlschema database_to_xml_and_xmlschema
  set_config current_setting pg_sleep pg_sleep_for pg_sleep_until pg_read_file pg_read_binary_file pg_ls_dir
  pg_stat_file pg_cancel_backend pg_terminate_backend pg_reload_conf lo_import lo_export dblink
  pg_advisory_lock pg_advisory_xact_lock pg_try_advisory_lock pg_advisory_lock_shared pg_notify
`);

/** Operators by name; each resolves to a built-in function of its operand types. */
export const OPERATORS = words(`
  = <> != < > <= >= + - * / % ^ || |/ ||/ @ & | # << >> ~~ !~~ ~~* !~~* -> ->> #> #>> @> <@ ? ?| ?& && #-
`);
export const REGEX_OPERATORS = words('~ ~* !~ !~*');

/** Types a value may be cast to (and arrays of them). Their input functions only parse text. */
export const TYPES = words(`
  text varchar char bpchar int2 int4 int8 smallint integer int bigint numeric decimal float4 float8 real
  bool boolean date time timetz timestamp timestamptz interval json jsonb uuid
`);

export const SQL_VALUE_FUNCTIONS = words(`
  SVFOP_CURRENT_DATE SVFOP_CURRENT_TIME SVFOP_CURRENT_TIME_N SVFOP_CURRENT_TIMESTAMP SVFOP_CURRENT_TIMESTAMP_N
  SVFOP_LOCALTIME SVFOP_LOCALTIME_N SVFOP_LOCALTIMESTAMP SVFOP_LOCALTIMESTAMP_N
`);

/**
 * Expression nodes with no behaviour of their own, and the fields holding their subtrees (each
 * checked). Any other field holding a subtree makes the node refused.
 */
export const PLAIN_NODES: Readonly<Record<string, readonly string[]>> = {
  ResTarget: ['val'],
  BoolExpr: ['args'],
  CoalesceExpr: ['args'],
  MinMaxExpr: ['args'],
  RowExpr: ['args'],
  NullTest: ['arg'],
  BooleanTest: ['arg'],
  CaseExpr: ['arg', 'args', 'defresult'],
  CaseWhen: ['expr', 'result'],
  A_ArrayExpr: ['elements'],
  GroupingSet: ['content'],
  GroupingFunc: ['args'],
  NamedArgExpr: ['arg'],
  List: ['items'],
};

/** Deeper expressions than this are refused (a nested query this deep is an attack, not a question). */
export const MAX_DEPTH = 200;

/** The name PostgreSQL gives an unnamed output column (FigureColnameInternal in parse_target.c). */
export function figureColumnName(value: unknown): string {
  if (!isObject(value)) return '?column?';
  const [kind, node] = Object.entries(value)[0] as [string, Json];
  switch (kind) {
    case 'ColumnRef': {
      const fields = (node.fields as unknown[]) ?? [];
      return sval(fields[fields.length - 1]) ?? '?column?';
    }
    case 'A_Indirection': {
      const steps = (node.indirection as unknown[]) ?? [];
      for (let i = steps.length - 1; i >= 0; i--) {
        const name = sval(steps[i]);
        if (name !== undefined) return name;
      }
      return figureColumnName(node.arg);
    }
    case 'FuncCall':
      return names(node.funcname).pop() ?? '?column?';
    case 'A_Expr':
      return node.kind === 'AEXPR_NULLIF' ? 'nullif' : '?column?';
    case 'TypeCast': {
      const inner = figureColumnName(node.arg);
      return inner !== '?column?' ? inner : (names((node.typeName as Json)?.names).pop() ?? '?column?');
    }
    case 'CollateClause':
      return figureColumnName(node.arg);
    case 'CaseExpr':
      return 'case';
    case 'A_ArrayExpr':
      return 'array';
    case 'RowExpr':
      return 'row';
    case 'CoalesceExpr':
      return 'coalesce';
    case 'MinMaxExpr':
      return node.op === 'IS_LEAST' ? 'least' : 'greatest';
    case 'SubLink':
      if (node.subLinkType === 'EXISTS_SUBLINK') return 'exists';
      if (node.subLinkType === 'ARRAY_SUBLINK') return 'array';
      if (node.subLinkType === 'EXPR_SUBLINK') {
        const first = (((node.subselect as Json)?.SelectStmt as Json)?.targetList as unknown[] | undefined)?.[0];
        const target = (first as Json | undefined)?.ResTarget as Json | undefined;
        if (target) return target.name ? String(target.name) : figureColumnName(target.val);
      }
      return '?column?';
    case 'SQLValueFunction':
      return String(node.op)
        .replace(/^SVFOP_/, '')
        .replace(/_N$/, '')
        .toLowerCase();
    default:
      return '?column?';
  }
}
