// The activity rollup as the queries over it see it (migration 024): the (day, user) pairs of
// activity, from the folded rows and the deltas not folded yet, in one statement.

export interface Fragment {
  sql: string;
  bindings: unknown[];
}

/**
 * The deltas not folded yet, summed per local day and user, as the CTE `k` every query starts
 * with. Deltas are few (the fold runs within seconds), so this reads the app's whole list.
 */
export const deltaKeys = (appId: string, timeZone: string): Fragment => ({
  sql: `k as (
    select (d.slot at time zone ?)::date as day, d.user_id, sum(d.events) as events,
           sum(d.revenue_events) as revenue_events, sum(d.revenue) as revenue
    from activity_deltas d where d.app_id = ?::uuid group by 1, 2)`,
  bindings: [timeZone, appId],
});

/**
 * The (day, user) pairs with at least one event (`paying`: one carrying revenue) and day in
 * [lo, hi) (dates, or naive local times of whole days), each once: the folded rows no delta
 * touches, and the sums of folded rows and deltas where deltas wait (a deletion's negative deltas
 * included). Needs the CTE `k`. `user`: only that user (an SQL expression, for correlated use);
 * `members`: only the users with these external ids (an audience).
 */
export function pairs(
  appId: string,
  r: { lo: string; hi: string },
  opts: { paying?: boolean; user?: string; members?: readonly string[] } = {},
): Fragment {
  const col = opts.paying ? 'revenue_events' : 'events';
  const members = opts.members
    ? ' and %.user_id in (select id from users where app_id = ?::uuid and external_id = any(?::text[]))'
    : '';
  const memberBindings = opts.members ? [appId, [...opts.members]] : [];
  const one = (alias: string) =>
    (opts.user ? ` and ${alias}.user_id = ${opts.user}` : '') + members.replace('%', alias);
  return {
    sql: `select u.day, u.user_id from user_days u
          where u.app_id = ?::uuid${one('u')} and u.day >= ?::date and u.day < ?::date and u.${col} > 0
            and not exists (select 1 from k where k.day = u.day and k.user_id = u.user_id)
          union all
          select s.day, s.user_id from (
            select k.day, k.user_id, k.${col} + coalesce(u.${col}, 0) as n
            from k left join user_days u on u.app_id = ?::uuid and u.day = k.day and u.user_id = k.user_id
            where k.day >= ?::date and k.day < ?::date${one('k')}
          ) s where s.n > 0`,
    bindings: [appId, ...memberBindings, r.lo, r.hi, appId, r.lo, r.hi, ...memberBindings],
  };
}

/**
 * The users whose first active day ever is in [lo, hi) (dates, or naive local times of whole
 * days), each with all their active days in order, as the CTEs ending in `sets(user_id, days)`.
 * Each user's days are kept in order in `user_active_days` (migration 026), one row a user; the
 * users the unfolded deltas touch are counted from their folded rows plus the deltas instead.
 * `members`: only the users with these external ids (an audience).
 */
export function firstActiveSets(
  appId: string,
  timeZone: string,
  r: { lo: string; hi: string },
  members?: readonly string[],
): Fragment {
  const k = deltaKeys(appId, timeZone);
  const only = (alias: string) =>
    members
      ? ` and ${alias}.user_id in (select id from users where app_id = ?::uuid and external_id = any(?::text[]))`
      : '';
  const memberBindings = members ? [appId, [...members]] : [];
  return {
    sql: `${k.sql},
     touched as (select distinct user_id from k),
     fresh as (
       select coalesce(u.user_id, t.user_id) as user_id, coalesce(u.day, t.day) as day
       from (select d.user_id, d.day, d.events from user_days d
             where d.app_id = ?::uuid and d.user_id in (select user_id from touched)) u
       full join k t on t.user_id = u.user_id and t.day = u.day
       where coalesce(u.events, 0) + coalesce(t.events, 0) > 0),
     sets as (
       select a.user_id, a.days from user_active_days a
       where a.app_id = ?::uuid and a.days[1] >= ?::date and a.days[1] < ?::date
         and not exists (select 1 from touched t where t.user_id = a.user_id)${only('a')}
       union all
       select f.user_id, f.days from (select user_id, array_agg(day order by day) as days from fresh group by user_id) f
       where f.days[1] >= ?::date and f.days[1] < ?::date${only('f')})`,
    bindings: [...k.bindings, appId, appId, r.lo, r.hi, ...memberBindings, r.lo, r.hi, ...memberBindings],
  };
}
