// Queries that build an app's lexicon for the natural-language engine: its event dictionary
// (names, display names, volumes, first seen), the property keys and frequent values of each
// event (sampled from its latest events) and of users (sampled from the latest users), and a
// cheap fingerprint that changes when new events or users arrive (to refresh a cached lexicon).
import type { Knex } from 'knex';
import type { LexiconData, PropertyStats } from '../lexicon.js';

/** Latest events read per event name, and latest users read, to learn keys and values. */
const EVENT_SAMPLE = 1_000;
const USER_SAMPLE = 5_000;
/** Values kept per key; a key with more distinct values is marked incomplete. */
const MAX_VALUES = 200;

interface KeyRow {
  owner: string | null;
  key: string;
  type: string;
  value: string | null;
  n: string;
}

/** Changes whenever the app gets new events or users (or their profiles change). */
export async function lexiconFingerprint(db: Knex, appId: string): Promise<string> {
  const { rows } = await db.raw(
    `select (select coalesce(sum(volume), 0) || ':' || count(*) || ':' || coalesce(max(last_seen)::text, '')
               from event_definitions where app_id = ?::uuid) || '|' ||
            (select count(*) || ':' || coalesce(max(updated_at)::text, '') from users where app_id = ?::uuid) as f`,
    [appId, appId],
  );
  return String((rows as { f: string }[])[0]?.f ?? '');
}

export async function loadLexiconData(db: Knex, appId: string): Promise<LexiconData> {
  const definitions = await db('event_definitions')
    .where({ app_id: appId, archived: false })
    .select<{ event_name: string; display_name: string | null; volume: string; first_seen: Date }[]>(
      'event_name',
      'display_name',
      'volume',
      'first_seen',
    );
  const keyRows = (
    await db.raw(
      `with sample as (
         select d.event_name as owner, s.properties
         from event_definitions d
         cross join lateral (
           select e.properties from events e
           where e.app_id = d.app_id and e.event_name = d.event_name and not e.is_bot
           order by e.created_at desc limit ${EVENT_SAMPLE}
         ) s
         where d.app_id = ?::uuid and not d.archived
       ), pairs as (
         select owner, kv.key, kv.value from sample, jsonb_each(sample.properties) kv
       )
       select owner, key, jsonb_typeof(value) as type,
              case when jsonb_typeof(value) in ('string', 'boolean') then value #>> '{}' end as value, count(*) as n
       from pairs group by 1, 2, 3, 4
       union all
       select owner, key, 'element', el.v, count(*)
       from pairs, jsonb_array_elements_text(case when jsonb_typeof(value) = 'array' then value else '[]'::jsonb end) el(v)
       group by 1, 2, 3, 4`,
      [appId],
    )
  ).rows as KeyRow[];
  const userRows = (
    await db.raw(
      `with sample as (
         select properties from users where app_id = ?::uuid order by created_at desc limit ${USER_SAMPLE}
       ), pairs as (
         select kv.key, kv.value from sample, jsonb_each(sample.properties) kv
       )
       select null as owner, key, jsonb_typeof(value) as type,
              case when jsonb_typeof(value) in ('string', 'boolean') then value #>> '{}' end as value, count(*) as n
       from pairs group by 2, 3, 4
       union all
       select null, key, 'element', el.v, count(*)
       from pairs, jsonb_array_elements_text(case when jsonb_typeof(value) = 'array' then value else '[]'::jsonb end) el(v)
       group by 2, 3, 4`,
      [appId],
    )
  ).rows as KeyRow[];
  const users = await db('users').where({ app_id: appId }).count<{ n: string }[]>('* as n').first();
  const byOwner = group(keyRows);
  return {
    events: definitions.map((d) => ({
      name: d.event_name,
      displayName: d.display_name,
      volume: Number(d.volume),
      firstSeen: d.first_seen ? new Date(d.first_seen).toISOString() : null,
      properties: byOwner.get(d.event_name) ?? [],
    })),
    userProperties: group(userRows).get(null) ?? [],
    users: Number(users?.n ?? 0),
  };
}

function group(rows: KeyRow[]): Map<string | null, PropertyStats[]> {
  const byOwner = new Map<string | null, Map<string, PropertyStats & { all: Map<string, number> }>>();
  for (const r of rows) {
    const owner = byOwner.get(r.owner) ?? new Map();
    byOwner.set(r.owner, owner);
    const p = owner.get(r.key) ?? {
      key: r.key,
      numeric: false,
      text: false,
      boolean: false,
      array: false,
      count: 0,
      values: [],
      complete: true,
      all: new Map<string, number>(),
    };
    owner.set(r.key, p);
    const n = Number(r.n);
    if (r.type === 'number') p.numeric = true;
    if (r.type === 'string') p.text = true;
    if (r.type === 'boolean') p.boolean = true;
    if (r.type === 'array') p.array = true;
    if (r.type !== 'element') p.count += n;
    if (r.value !== null && (r.type === 'string' || r.type === 'boolean' || r.type === 'element')) {
      p.all.set(r.value, (p.all.get(r.value) ?? 0) + n);
    }
  }
  const out = new Map<string | null, PropertyStats[]>();
  for (const [owner, keys] of byOwner) {
    out.set(
      owner,
      [...keys.values()].map(({ all, ...p }) => {
        const values = [...all]
          .map(([value, count]) => ({ value, count }))
          .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
        return { ...p, values: values.slice(0, MAX_VALUES), complete: values.length <= MAX_VALUES };
      }),
    );
  }
  return out;
}
