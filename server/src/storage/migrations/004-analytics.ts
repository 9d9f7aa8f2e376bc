// Analytics: the NOLOGIN role the SQL sandbox switches to (SELECT on events and users only), and
// indexes that let metrics read the (time, user) pairs of human traffic, and of the events that
// carry revenue, without visiting every row.
// The role is cluster-wide and may already exist (another database of the same server), and a
// database owner without CREATEROLE cannot make it: each step is attempted on its own, and the
// sandbox checks at run time whether it can switch to the role (DESIGN §8).
import type { Knex } from 'knex';

const ROLE = 'tally_sandbox';

async function attempt(knex: Knex, body: string): Promise<void> {
  await knex.raw(
    `DO $$ BEGIN ${body} EXCEPTION WHEN OTHERS THEN RAISE NOTICE 'tally: % (%)', SQLERRM, SQLSTATE; END $$`,
  );
}

export async function up(knex: Knex): Promise<void> {
  await attempt(
    knex,
    `IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${ROLE}') THEN CREATE ROLE ${ROLE} NOLOGIN NOINHERIT; END IF;`,
  );
  await attempt(knex, `EXECUTE format('GRANT ${ROLE} TO %I', current_user);`);
  await attempt(knex, `GRANT USAGE ON SCHEMA public TO ${ROLE};`);
  await attempt(knex, `GRANT SELECT ON public.events, public.users TO ${ROLE};`);
  await knex.raw(
    'CREATE INDEX IF NOT EXISTS events_app_human_time ON events (app_id, created_at) INCLUDE (user_id) WHERE NOT is_bot',
  );
  // Revenue, arpu and conversion read only the events carrying revenue (`\\?` is jsonb's ? operator).
  await knex.raw(
    `CREATE INDEX IF NOT EXISTS events_app_revenue_time ON events (app_id, created_at) INCLUDE (user_id)
     WHERE NOT is_bot AND (properties \\? 'revenue' OR properties \\? 'amount')`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS events_app_revenue_time');
  await knex.raw('DROP INDEX IF EXISTS events_app_human_time');
  await attempt(knex, `REVOKE SELECT ON public.events, public.users FROM ${ROLE};`);
  await attempt(knex, `REVOKE USAGE ON SCHEMA public FROM ${ROLE};`);
}
