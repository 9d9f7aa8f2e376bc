// The embedded cost check's second look at a plan: how many rows its joins can really make. The
// planner estimates a join from statistics over every app's rows: an equality on event_name looks
// selective when the whole table has many names, though within one app a single name may hold most
// events, and a self-join on it then pairs nearly every event with every other (millions of rows
// from a few thousand events, past the embedded time cap). So each join of the plan is estimated
// again: an equality on an event name or a user uses the app's own frequencies (the event
// dictionary's volumes, the users' event counts: sum of count² over N²), an equality on a unique
// id keeps the other side's rows, and an equality on another column counts every pair; a join on
// what the query computes keeps the planner's selectivity. The embedded database gathers
// statistics only every ten minutes, so an app's scans are scaled up to the rows it has now when
// the planner believes it has fewer.
import type pg from 'pg';

/** What the plan is re-estimated with, for one app. */
export interface KeyStats {
  /** Self-join selectivities within the app: the chance that two of its events share the key. */
  eventName: number;
  user: number;
  /** How many times more events and users the app has than the planner's statistics say (at least 1). */
  eventsScale: number;
  usersScale: number;
}

/** The app's own key frequencies and sizes (over its event dictionary and users; one row each). */
export interface KeyCounts {
  eventName: number;
  user: number;
  events: number;
  users: number;
}

/** Reads the app's key frequencies and sizes: worth caching for a while (it reads every user of the app). */
export async function appKeyCounts(client: pg.ClientBase, appId: string): Promise<KeyCounts> {
  const { rows } = await client.query(
    `SELECT (SELECT sum(volume::float8 * volume) / nullif(sum(volume::float8) ^ 2, 0)
               FROM event_definitions WHERE app_id = $1::uuid) AS names,
            (SELECT sum(volume)::float8 FROM event_definitions WHERE app_id = $1::uuid) AS events,
            (SELECT sum(event_count::float8 * event_count) / nullif(sum(event_count::float8) ^ 2, 0)
               FROM users WHERE app_id = $1::uuid) AS users,
            (SELECT count(*)::float8 FROM users WHERE app_id = $1::uuid) AS user_rows`,
    [appId],
  );
  const row = rows[0] ?? {};
  // Without counts yet, assume the worst: one name, one user.
  return {
    eventName: Number(row.names ?? 1) || 1,
    user: Number(row.users ?? 1) || 1,
    events: Number(row.events ?? 0),
    users: Number(row.user_rows ?? 0),
  };
}

/**
 * The app's counts against the planner's view of its rows now. Never cached: the planner's
 * estimate moves without ANALYZE (it scales its last statistics by the table's pages as they grow),
 * and a ratio kept from a moment when it believed the app had one row would, once it sees them all,
 * count every row again as many times over (a 200-event self-join taken for 800 million rows).
 */
export async function appKeyStats(client: pg.ClientBase, appId: string, counts: KeyCounts): Promise<KeyStats> {
  // The planner's view of the app's rows, with the filters of the sandbox relations.
  const planned = async (relation: string) => {
    const plan = await client.query({ text: `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${relation}`, values: [appId] });
    return Number(
      (plan.rows[0]?.['QUERY PLAN'] as { Plan?: { 'Plan Rows'?: number } }[])?.[0]?.Plan?.['Plan Rows'] ?? 1,
    );
  };
  const scale = (actual: number, estimate: number) => Math.max(1, actual / Math.max(1, estimate));
  return {
    eventName: counts.eventName,
    user: counts.user,
    eventsScale: scale(counts.events, await planned('public.events WHERE app_id = $1::uuid AND NOT is_bot')),
    usersScale: scale(counts.users, await planned('public.users WHERE app_id = $1::uuid')),
  };
}

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

interface Estimate {
  rows: number;
  /** The planner's own estimate of those rows. */
  planned: number;
  /** Scans below this node: alias -> relation. */
  aliases: Map<string, string>;
  /** Aliases whose rows may come out more than once here (a join repeated them). */
  repeated: Set<string>;
}

const JOINS = new Set(['Hash Join', 'Merge Join', 'Nested Loop']);
const EQUALITY =
  /^\(?\s*\(?([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\)?\s*=\s*\(?([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\)?\s*\)?$/;

/** What a column of the real tables identifies: one event, one user, or an event name. */
function keyOf(relation: string | undefined, column: string): 'event' | 'user' | 'name' | null {
  if (relation === 'events')
    return column === 'id' ? 'event' : column === 'user_id' ? 'user' : column === 'event_name' ? 'name' : null;
  if (relation === 'users') return column === 'id' || column === 'external_id' ? 'user' : null;
  return null;
}

/** Splits `((a = b) AND (c = d))` into its terms. */
function terms(condition: string): string[] {
  let text = condition.trim();
  while (text.startsWith('((') && text.endsWith('))')) text = text.slice(1, -1);
  return text.split(/\)\s+AND\s+\(/).map((t) => t.replace(/^\(+|\)+$/g, ''));
}

/** The rows the plan's joins can make in all, estimated with the app's own key frequencies. */
export function joinRows(plan: PlanNode, stats: KeyStats): number {
  let total = 0;
  const walk = (node: PlanNode): Estimate => {
    const children = (node.Plans ?? []).filter(
      (p) => !['SubPlan', 'InitPlan'].includes(String(p['Parent Relationship'])),
    );
    for (const sub of node.Plans ?? []) if (!children.includes(sub)) walk(sub);
    const estimates = children.map(walk);
    const aliases = new Map<string, string>();
    const repeated = new Set<string>();
    for (const e of estimates) {
      for (const [a, r] of e.aliases) aliases.set(a, r);
      for (const a of e.repeated) repeated.add(a);
    }
    const planned = Number(node['Plan Rows'] ?? 0);
    const relation = node['Relation Name'];
    if (typeof relation === 'string') {
      aliases.set(String(node.Alias), relation);
      const scale = relation === 'events' ? stats.eventsScale : relation === 'users' ? stats.usersScale : 1;
      return { rows: planned * scale, planned, aliases, repeated };
    }
    if (JOINS.has(String(node['Node Type'])) && estimates.length >= 2) {
      const join = joinEstimate(node, estimates[0]!, estimates[1]!, stats);
      total += join.rows;
      return { rows: join.rows, planned, aliases, repeated: join.repeated };
    }
    if (node['Node Type'] === 'Aggregate' && node.Strategy === 'Plain') return { rows: 1, planned, aliases, repeated };
    if (node['Node Type'] === 'Append' || node['Node Type'] === 'MergeAppend') {
      return { rows: estimates.reduce((n, e) => n + e.rows, 0), planned, aliases, repeated };
    }
    const child = estimates[0];
    if (!child) return { rows: planned, planned, aliases, repeated };
    // Other nodes keep the planner's view of how they shrink or pass on their input.
    const childPlanned = Number(children[0]!['Plan Rows'] ?? 0);
    const scale = childPlanned > 0 ? child.rows / childPlanned : 1;
    return { rows: Math.min(child.rows, Math.max(planned, planned * scale)), planned, aliases, repeated };
  };
  walk(plan);
  return total;
}

function joinEstimate(
  node: PlanNode,
  outer: Estimate,
  inner: Estimate,
  stats: KeyStats,
): { rows: number; repeated: Set<string> } {
  const type = String(node['Join Type'] ?? 'Inner');
  if (type === 'Semi' || type === 'Anti') return { rows: outer.rows, repeated: outer.repeated };
  if (type === 'Right Semi' || type === 'Right Anti') return { rows: inner.rows, repeated: inner.repeated };
  // A nested loop over an index gives the inner rows per outer row: their product is the estimate.
  const condition = innerIndexCondition(node)
    ? ''
    : [node['Hash Cond'], node['Merge Cond'], node['Join Filter']]
        .filter((c): c is string => typeof c === 'string')
        .join(' AND ');
  // Unless a side matches at most one row per row of the other, both sides' rows may repeat.
  let repeated = new Set([...outer.aliases.keys(), ...inner.aliases.keys()]);
  // Equalities between columns of events and users, estimated with the app's own numbers.
  const understood: number[] = [];
  for (const term of condition ? terms(condition) : []) {
    const m = EQUALITY.exec(term);
    if (!m) continue;
    const [, a1, c1, a2, c2] = m as unknown as [string, string, string, string, string];
    const sideOf = (alias: string) => (outer.aliases.has(alias) ? outer : inner.aliases.has(alias) ? inner : null);
    const s1 = sideOf(a1);
    const s2 = sideOf(a2);
    if (!s1 || !s2 || s1 === s2) continue;
    const k1 = keyOf(s1.aliases.get(a1), c1);
    const k2 = keyOf(s2.aliases.get(a2), c2);
    // An id of events or users names one row, unless a join below has repeated that row.
    const unique1 = (k1 === 'event' || (k1 === 'user' && s1.aliases.get(a1) === 'users')) && !s1.repeated.has(a1);
    const unique2 = (k2 === 'event' || (k2 === 'user' && s2.aliases.get(a2) === 'users')) && !s2.repeated.has(a2);
    if (unique1 || unique2) {
      const other = unique1 ? s2 : s1;
      const one = unique1 ? s1 : s2;
      understood.push(unique1 && unique2 ? Math.min(s1.rows, s2.rows) : other.rows);
      repeated = new Set([...other.repeated, ...one.aliases.keys()]);
    } else if (k1 && k1 === k2 && k1 !== 'event') {
      understood.push(outer.rows * inner.rows * (k1 === 'name' ? stats.eventName : stats.user));
    } else {
      // another column (app_id, the same on every row here, or a time): every pair may match
      understood.push(outer.rows * inner.rows);
    }
  }
  // Otherwise (keys computed by the query, rows of subqueries): the planner's selectivity, applied
  // to the inputs as re-estimated.
  const selectivity = Number(node['Plan Rows'] ?? 0) / Math.max(1, outer.planned * inner.planned);
  let rows = innerIndexCondition(node)
    ? outer.rows * inner.rows
    : understood.length > 0
      ? Math.min(...understood)
      : outer.rows * inner.rows * Math.min(1, selectivity);
  if (type === 'Left') rows = Math.max(rows, outer.rows);
  if (type === 'Right') rows = Math.max(rows, inner.rows);
  if (type === 'Full') rows = Math.max(rows, outer.rows + inner.rows);
  return { rows, repeated };
}

/** The index condition of a nested loop's inner side, when the loop looks rows up by index. */
function innerIndexCondition(node: PlanNode): string | undefined {
  if (node['Node Type'] !== 'Nested Loop') return undefined;
  const inner = (node.Plans ?? []).find((p) => p['Parent Relationship'] === 'Inner');
  for (let n: PlanNode | undefined = inner; n; n = n.Plans?.[0]) {
    if (typeof n['Index Cond'] === 'string') return n['Index Cond'];
  }
  return undefined;
}
