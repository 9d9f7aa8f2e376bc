// What the event writer writes beside events in the ingestion transaction: the website visit that
// came with a page_view, and the trigger outbox rows of the app's trigger campaigns (read by the
// engagement wing's trigger worker).
import type { Knex } from 'knex';

export interface VisitRow {
  id: string;
  app_id: string;
  user_id: string;
  visitor_id: string;
  visit_url: string;
  path: string | null;
  referrer: string | null;
  page_title: string | null;
  ua: string | null;
  ip: string | null;
  signals: Record<string, unknown>;
  advanced_signals: Record<string, unknown> | null;
  is_bot: boolean;
  bot_reason: string | null;
  event_id: string | null;
  created_at: Date;
  received_at: Date;
}

/** Writes visits (inside the event writer's transaction, with their page_view events). */
export async function insertVisits(db: Knex, rows: Omit<VisitRow, 'received_at'>[]): Promise<void> {
  await db('visits').insert(
    rows.map((row) => ({
      ...row,
      signals: JSON.stringify(row.signals),
      advanced_signals: row.advanced_signals === null ? null : JSON.stringify(row.advanced_signals),
    })),
  );
}

export interface OutboxEvent {
  eventId: string;
  userId: string;
  eventName: string;
  eventAt: Date;
  receivedAt: Date;
}

/**
 * In the ingestion transaction: one outbox row per event and trigger campaign (scheduled or live)
 * of the app that waits for that event name; returns how many were written.
 */
export async function insertTriggerOutbox(db: Knex, appId: string, events: OutboxEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const values = events.map(() => '(?::uuid, ?::uuid, ?, ?::timestamptz, ?::timestamptz)').join(', ');
  const { rowCount } = await db.raw(
    `insert into campaign_trigger_outbox (app_id, campaign_id, user_id, event_id, event_at, received_at)
     select c.app_id, c.id, v.user_id, v.event_id, v.event_at, v.received_at
     from (values ${values}) as v(event_id, user_id, event_name, event_at, received_at)
     join campaigns c on c.app_id = ?::uuid and c.schedule_type = 'trigger'
       and c.status in ('scheduled', 'live') and c.trigger_event_name = v.event_name`,
    [...events.flatMap((e) => [e.eventId, e.userId, e.eventName, e.eventAt, e.receivedAt]), appId],
  );
  return rowCount ?? 0;
}
