// Identity verification of website visitors: where each user came from (`users.created_via`), so
// that an unverified `identify` from a browser can only reach users the website itself created,
// and each app's identity secrets (at most two, so sites can rotate), sealed with SECRET_KEY.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // api: created through the REST API, the admin API or demo data (and every user that existed
  // before this migration, unless it clearly came from the website); website: created by a
  // browser without proof of identity; website_verified: created from the website with a valid
  // user_hash. A constant default keeps this a metadata-only change on large tables.
  await knex.schema.alterTable('users', (t) => {
    t.text('created_via').notNullable().defaultTo('api');
  });
  // Existing users that came from the website: created by a website form (the origin that
  // endpoint writes), or seen only through website traffic.
  await knex.raw(`
    update users u set created_via = 'website'
    where (jsonb_typeof(u.origin) = 'object' and u.origin->>'channel' = 'website'
           and u.origin->>'website_url' is not null
           and (select count(*) from jsonb_object_keys(u.origin)) = 2)
       or (exists (select 1 from events e where e.app_id = u.app_id and e.user_id = u.id and e.source = 'website')
           and not exists (select 1 from events e
                           where e.app_id = u.app_id and e.user_id = u.id and e.source <> 'website'))`);
  await knex.schema.createTable('app_identity_secrets', (t) => {
    t.uuid('id').primary();
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    // AES-256-GCM envelope of the secret (secrets.ts), never plaintext.
    t.text('secret').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['app_id', 'id']);
    t.index(['app_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('app_identity_secrets');
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('created_via');
  });
}
