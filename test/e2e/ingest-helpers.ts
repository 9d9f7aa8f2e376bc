// Helpers of the event writer's tests (ingest-load, ingest-concurrency): requests with a tenant's
// key, requests built for the writer itself, and the calls of tally_ingest waiting for a lock.
import type { Knex } from 'knex';
import type { EventWriter, IngestEvent } from '../../server/src/storage/event-writer.js';
import type { Tenant } from '../helpers/server.js';

/** POSTs JSON with the tenant's key and returns status and body. */
export async function post(baseUrl: string, tenant: Tenant, path: string, body: unknown) {
  const res = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/** Events of one request for the writer, all named `name`. */
export function events(appId: string, users: string[], names: string[]): IngestEvent[] {
  const now = new Date();
  return users.flatMap((userRef) =>
    names.map((eventName) => ({
      appId,
      userRef,
      eventName,
      properties: {},
      createdAt: now,
      receivedAt: now,
      source: 'api' as const,
      isBot: false,
    })),
  );
}

/** Submits each request as its own group (the next one only once the previous one is in flight). */
export async function submitAsGroups(writer: EventWriter, requests: IngestEvent[][]) {
  const written = [];
  for (const r of requests) {
    written.push(writer.submit(r));
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
  }
  return written;
}

/** Calls of tally_ingest waiting for a lock, on this database. */
export async function waitingCalls(knex: Knex): Promise<number> {
  const { rows } = await knex.raw<{ rows: { n: string }[] }>(
    `select count(*) as n from pg_stat_activity
     where datname = current_database() and wait_event_type = 'Lock' and query like '%tally_ingest(%'`,
  );
  return Number(rows[0]!.n);
}
