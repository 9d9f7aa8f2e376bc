// Queries for push campaigns: the campaign rows, their listing with delivery counters, the
// scheduler's due campaigns, and the trigger outbox the event writer fills in its transaction.
// Sends, batches and deliveries of campaigns are in engagement/queries/campaign-sends.ts.
import type { Knex } from 'knex';

export type CampaignStatus = 'scheduled' | 'live' | 'paused' | 'sent';
export type ScheduleType = 'now' | 'scheduled' | 'recurring' | 'slipping_away' | 'trigger';
export type MatchMethod = 'exact' | 'fuzzy' | 'llm';

export interface CampaignRow {
  id: string;
  app_id: string;
  name: string;
  title: string;
  message: string | null;
  prompt: string | null;
  max_characters: number | null;
  action_url: string | null;
  audience_id: string | null;
  audience_auto_created: boolean;
  schedule_type: ScheduleType;
  scheduled_at: Date | null;
  recurrence: string | null;
  inactivity_days: number | null;
  trigger_event_name: string | null;
  trigger_cooldown_hours: number | null;
  match_method: MatchMethod | null;
  available_events_count: number | null;
  status: CampaignStatus;
  paused_from: CampaignStatus | null;
  next_run_at: Date | null;
  first_sent_at: Date | null;
  completed_at: Date | null;
  /** admin | mcp; null for campaigns created before the creator was recorded. */
  created_by_kind: 'admin' | 'mcp' | null;
  created_by_key_id: string | null;
  created_by_key_name: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface CampaignCounts {
  sent: number;
  delivered: number;
  clicked: number;
  converted: number;
}

export async function insertCampaign(db: Knex, row: CampaignRow): Promise<CampaignRow> {
  const [saved] = await db('campaigns').insert(row).returning('*');
  return saved as CampaignRow;
}

export const findCampaign = (db: Knex, appId: string, id: string) =>
  db<CampaignRow>('campaigns').where({ app_id: appId, id }).first();

/** Not per-app: the admin API names a campaign by its id alone; the row says its app. */
export const findCampaignById = (db: Knex, id: string) => db<CampaignRow>('campaigns').where({ id }).first();

export const listCampaigns = (db: Knex, appId: string, filter: { status?: CampaignStatus; limit?: number }) => {
  const q = db<CampaignRow>('campaigns').where({ app_id: appId });
  if (filter.status) q.where({ status: filter.status });
  q.orderBy([
    { column: 'created_at', order: 'desc' },
    { column: 'id', order: 'desc' },
  ]);
  if (filter.limit !== undefined) q.limit(filter.limit);
  return q;
};

export async function countCampaigns(db: Knex, appId: string, status?: CampaignStatus): Promise<number> {
  const q = db('campaigns').where({ app_id: appId });
  if (status) q.where({ status });
  const [row] = await q.count<{ n: string }[]>({ n: '*' });
  return Number(row?.n ?? 0);
}

export const updateCampaign = (db: Knex, appId: string, id: string, patch: Partial<CampaignRow>) =>
  db('campaigns')
    .where({ app_id: appId, id })
    .update(patch)
    .returning<CampaignRow[]>('*')
    .then((r) => r[0]);

/**
 * Changes a campaign only if it is still in `from` (and, when given, its next run is still
 * `nextRunAt`): of concurrent changes or workers, one wins.
 */
export const moveCampaign = (
  db: Knex,
  appId: string,
  id: string,
  from: CampaignStatus[],
  patch: Partial<CampaignRow>,
  nextRunAt?: Date | null,
) =>
  db('campaigns')
    .where({ app_id: appId, id })
    .whereIn('status', from)
    .modify((q) => {
      if (nextRunAt === null) q.whereNull('next_run_at');
      else if (nextRunAt) q.where('next_run_at', nextRunAt);
    })
    .update(patch)
    .returning<CampaignRow[]>('*')
    .then((r) => r[0]);

/** Not per-app: the scheduler looks at every app's campaigns whose next run is due. */
export const dueCampaigns = (db: Knex, now: Date, limit: number) =>
  db<CampaignRow>('campaigns')
    .whereIn('status', ['scheduled', 'live'])
    .whereNotNull('next_run_at')
    .where('next_run_at', '<=', now)
    .orderBy('next_run_at')
    .limit(limit);

/** Delivery counters per campaign: sent (2xx), delivered, clicked (own link or batch link), converted. */
export async function campaignCounts(
  db: Knex,
  appId: string,
  campaignIds: string[],
  conversionEvents: string[],
): Promise<Map<string, CampaignCounts>> {
  const out = new Map<string, CampaignCounts>();
  if (campaignIds.length === 0) return out;
  const conversion =
    conversionEvents.length > 0
      ? `e.event_name in (${conversionEvents.map(() => '?').join(', ')})`
      : `(jsonb_typeof(e.properties -> 'revenue') = 'number' or jsonb_typeof(e.properties -> 'amount') = 'number')`;
  const { rows } = await db.raw(
    `select d.campaign_id,
       count(*) filter (where d.status in ('sent', 'delivered')) as sent,
       count(*) filter (where d.status = 'delivered') as delivered,
       count(*) filter (where d.clicked_at is not null) as clicked_own,
       count(*) filter (where d.status in ('sent', 'delivered') and exists (
         select 1 from events e where e.app_id = d.app_id and e.user_id = d.user_id
           and e.created_at >= d.created_at and e.created_at < d.created_at + interval '24 hours'
           and ${conversion})) as converted
     from push_deliveries d
     where d.app_id = ? and d.campaign_id in (${campaignIds.map(() => '?').join(', ')})
     group by d.campaign_id`,
    [...conversionEvents, appId, ...campaignIds],
  );
  const { rows: batches } = await db.raw(
    `select campaign_id, coalesce(sum(least(clicks, size)), 0) as clicked
     from push_batches where app_id = ? and campaign_id in (${campaignIds.map(() => '?').join(', ')})
     group by campaign_id`,
    [appId, ...campaignIds],
  );
  const batchClicks = new Map<string, number>(
    (batches as { campaign_id: string; clicked: string }[]).map((b) => [b.campaign_id, Number(b.clicked)]),
  );
  for (const id of campaignIds) out.set(id, { sent: 0, delivered: 0, clicked: batchClicks.get(id) ?? 0, converted: 0 });
  for (const r of rows as Record<string, string>[]) {
    out.set(r.campaign_id!, {
      sent: Number(r.sent),
      delivered: Number(r.delivered),
      clicked: Number(r.clicked_own) + (batchClicks.get(r.campaign_id!) ?? 0),
      converted: Number(r.converted),
    });
  }
  return out;
}

/** Whether the app has any trigger campaign that may still fire (the writer's cheap pre-check). */
export async function appHasTriggerCampaigns(db: Knex, appId: string): Promise<boolean> {
  const row = await db('campaigns')
    .where({ app_id: appId, schedule_type: 'trigger' })
    .whereIn('status', ['scheduled', 'live'])
    .first('id');
  return row !== undefined;
}

export interface OutboxRow {
  seq: string;
  app_id: string;
  campaign_id: string;
  user_id: string;
  event_id: string;
  event_at: Date;
  received_at: Date;
  /** Times a worker took it, this take included. */
  attempts: number;
  /** When it may be taken (again): the end of a worker's lease, or the retry after a failure. */
  next_attempt_at: Date | null;
  last_error: string | null;
}

/**
 * Not per-app: the trigger worker takes the oldest occurrence of any app that is due (rows another
 * worker holds are skipped), counts the attempt and leases it until `leaseUntil`. The row stays in
 * the outbox: the transaction that claims its sends deletes it (deleteOutboxRow), and a worker that
 * stops before that leaves it to be taken again once the lease ends.
 */
export async function takeOutboxRow(db: Knex, now: Date, leaseUntil: Date): Promise<OutboxRow | undefined> {
  const { rows } = await db.raw(
    `update campaign_trigger_outbox set attempts = attempts + 1, next_attempt_at = ?
     where seq in (select seq from campaign_trigger_outbox
                   where next_attempt_at is null or next_attempt_at <= ?
                   order by seq limit 1 for update skip locked)
     returning *`,
    [leaseUntil, now],
  );
  return (rows as OutboxRow[])[0];
}

/** Whether the worker that took `row` still holds it: no other worker took it since. */
const heldBy = (db: Knex, row: Pick<OutboxRow, 'app_id' | 'seq' | 'attempts'>) =>
  db('campaign_trigger_outbox').where({ app_id: row.app_id, seq: row.seq, attempts: row.attempts });

/** Deletes a taken occurrence; false when another worker took it over meanwhile (nothing deleted). */
export async function deleteOutboxRow(db: Knex, row: Pick<OutboxRow, 'app_id' | 'seq' | 'attempts'>) {
  return (await heldBy(db, row).delete()) > 0;
}

/** Puts a taken occurrence back until `at`, with the error that stopped it. */
export async function retryOutboxRow(
  db: Knex,
  row: Pick<OutboxRow, 'app_id' | 'seq' | 'attempts'>,
  at: Date,
  error: string,
): Promise<boolean> {
  return (await heldBy(db, row).update({ next_attempt_at: at, last_error: error })) > 0;
}
