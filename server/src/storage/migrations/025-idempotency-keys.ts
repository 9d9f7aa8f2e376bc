// Idempotency keys of the REST writes (POST /v1/sendpush, /v1/audiences, /v1/users,
// /v1/users/aliases, /v1/users/replace-id): one row per (app, API key, operation, key), holding a
// fingerprint of the first request's body and, once it is answered, that answer, so a retry gets
// it instead of running again. A row is `running` while its first request is served (under a lease
// that a crash cannot hold for ever) and `done` after; it expires 24 hours after its first request.
// `subjects` lists the users the request named (identifiers as sent and internal ids), so a user's
// erasure removes the answers that may quote them.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.uuid('api_key_id').notNullable().references('api_keys.id').onDelete('CASCADE');
    t.text('operation').notNullable(); // the contract's operation id, e.g. Push_send
    t.text('key').notNullable(); // the Idempotency-Key as sent (printable ASCII, at most 255)
    t.text('fingerprint').notNullable(); // SHA-256 of the request body in canonical JSON
    t.uuid('run_id').notNullable(); // the request that holds the row now
    t.text('state').notNullable(); // running | done
    t.timestamp('lease_until', { useTz: true }).notNullable(); // a running row older than this may be taken over
    t.integer('status'); // the stored answer (done rows)
    t.jsonb('headers');
    t.text('body');
    t.specificType('subjects', 'text[]').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.primary(['app_id', 'api_key_id', 'operation', 'key']);
    t.index(['app_id', 'expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('idempotency_keys');
}
