// Funnel step counts over human events (bot traffic excluded). Each user enters at their first
// event of step 1 in the window; at every later step the user's earliest event of that step's name
// after the event matched at the previous step (by time, then event id), and within `windowDays`
// days of the entry, is matched. A step counts the users matched at it.
import type { Knex } from 'knex';
import { timedRows } from '../../storage/timed.js';

export interface FunnelQuery {
  appId: string;
  /** Event names of the steps, in order (at least one). */
  steps: readonly string[];
  timeZone: string;
  /** Inclusive start and exclusive end of the entry window, local times. */
  from: string;
  to: string;
  windowDays: number;
  timeoutMs: number;
}

/** Users matched at each step. */
export async function funnelStepUsers(db: Knex, q: FunnelQuery): Promise<number[]> {
  const ctes = [
    `s0 as (
       select distinct on (e.user_id) e.user_id, e.created_at as t, e.id, e.created_at as t0
       from events e
       where e.app_id = ?::uuid and not e.is_bot and e.event_name = ?
         and e.created_at >= (?::timestamp at time zone ?) and e.created_at < (?::timestamp at time zone ?)
       order by e.user_id, e.created_at, e.id
     )`,
  ];
  const bindings: unknown[] = [q.appId, q.steps[0], q.from, q.timeZone, q.to, q.timeZone];
  for (let i = 1; i < q.steps.length; i++) {
    ctes.push(`s${i} as (
       select distinct on (p.user_id) p.user_id, e.created_at as t, e.id, p.t0
       from s${i - 1} p join events e on e.app_id = ?::uuid and e.user_id = p.user_id and not e.is_bot
         and e.event_name = ? and (e.created_at, e.id) > (p.t, p.id)
         and e.created_at <= p.t0 + make_interval(days => ?::int)
       order by p.user_id, e.created_at, e.id
     )`);
    bindings.push(q.appId, q.steps[i], q.windowDays);
  }
  const counts = q.steps.map((_, i) => `(select count(*) from s${i}) as c${i}`).join(', ');
  const [row] = await timedRows<Record<string, string>>(
    db,
    q.timeoutMs,
    `with ${ctes.join(',\n')}\nselect ${counts}`,
    bindings,
  );
  return q.steps.map((_, i) => Number(row?.[`c${i}`] ?? 0));
}
