// The ordered list of migrations. Imported explicitly (not read from a folder) so they run the
// same from TypeScript sources, compiled output and tests.
import type { Knex } from 'knex';
import * as m001 from './001-tenancy.js';
import * as m002 from './002-events-users.js';
import * as m003 from './003-app-versions.js';
import * as m004 from './004-analytics.js';
import * as m005 from './005-audiences.js';
import * as m006 from './006-website.js';
import * as m007 from './007-push.js';
import * as m008 from './008-sandbox-login.js';
import * as m009 from './009-identity.js';
import * as m011 from './011-segments-v2.js';
import * as m013 from './013-mcp-sessions.js';
import * as m014 from './014-campaigns.js';
import * as m015 from './015-privacy.js';
import * as m016 from './016-delivery.js';
import * as m017 from './017-api-written.js';
import * as m018 from './018-mcp-campaigns.js';
import * as m020 from './020-mcp-session-policy.js';
import * as m021 from './021-delivery-retries.js';
import * as m022 from './022-audit-trail.js';
import * as m023 from './023-ingest-function.js';
import * as m024 from './024-activity-rollups.js';
import * as m025 from './025-idempotency-keys.js';
import * as m026 from './026-activity-days.js';
import * as m027 from './027-app-day-events.js';
import * as m028 from './028-event-slots.js';
import * as m029 from './029-event-name-covering.js';
import * as m030 from './030-property-slots.js';
import * as m031 from './031-user-totals.js';
import * as m032 from './032-money-events.js';

const migrations: Record<
  string,
  { up(k: Knex): Promise<void>; down(k: Knex): Promise<void>; config?: { transaction?: boolean } }
> = {
  '001-tenancy': m001,
  '002-events-users': m002,
  '003-app-versions': m003,
  '004-analytics': m004,
  '005-audiences': m005,
  '006-website': m006,
  '007-push': m007,
  '008-sandbox-login': m008,
  '009-identity': m009,
  '011-segments-v2': m011,
  '013-mcp-sessions': m013,
  '014-campaigns': m014,
  '015-privacy': m015,
  '016-delivery': m016,
  '017-api-written': m017,
  '018-mcp-campaigns': m018,
  '021-delivery-retries': m021,
  '020-mcp-session-policy': m020,
  '022-audit-trail': m022,
  '023-ingest-function': m023,
  '024-activity-rollups': m024,
  '025-idempotency-keys': m025,
  '026-activity-days': m026,
  '027-app-day-events': m027,
  '028-event-slots': m028,
  '029-event-name-covering': m029,
  '030-property-slots': m030,
  '031-user-totals': m031,
  '032-money-events': m032,
};

const source: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name] as Knex.Migration,
};

export async function runMigrations(knex: Knex): Promise<void> {
  await knex.migrate.latest({ migrationSource: source, tableName: 'knex_migrations' });
}

/** True when every migration has run (readiness). */
export async function migrationsAreCurrent(knex: Knex): Promise<boolean> {
  const [, pending] = (await knex.migrate.list({ migrationSource: source })) as [unknown[], unknown[]];
  return pending.length === 0;
}
