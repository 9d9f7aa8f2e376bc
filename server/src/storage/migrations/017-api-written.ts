// Identity verification, second step: a website user whose profile the site's backend wrote
// through the REST users API (POST /v1/users, aliases, replace-id) is the backend's user from then
// on, and a browser without a valid user_hash may no longer reach it. `users.api_written_at`
// records when that first happened (null: never); `created_via` keeps saying where the user began.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // No default: adding a nullable column is a metadata-only change on large tables.
  await knex.schema.alterTable('users', (t) => {
    t.timestamp('api_written_at', { useTz: true });
  });
  // Website users that carry what only the REST API writes: a phone, properties other than the
  // form's name fields, or an origin other than the one a website form records. Their time is
  // unknown, so their last update stands for it.
  await knex.raw(`
    update users u set api_written_at = u.updated_at
    where u.created_via in ('website', 'website_verified')
      and (u.phone is not null
           or exists (select 1 from jsonb_object_keys(coalesce(u.properties, '{}'::jsonb)) k
                      where k not in ('first_name', 'last_name', 'name'))
           or (u.origin is not null
               and not (jsonb_typeof(u.origin) = 'object' and u.origin->>'channel' = 'website'
                        and (select count(*) from jsonb_object_keys(u.origin)) = 2
                        and u.origin->>'website_url' is not null)))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('api_written_at');
  });
}
