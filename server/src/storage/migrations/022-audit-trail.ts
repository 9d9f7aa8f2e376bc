// The full audit trail and admin token rotation: every audit entry gets non-secret details (which
// fields changed, which key, which provider), installation-wide actions (organizations, the admin
// token, SECRET_KEY) get a table of their own, and admin tokens move from one setting to a table
// of hashed tokens, each with a label and an optional end of validity (the overlap of a rotation).
import type { Knex } from 'knex';
import { uuidv7 } from '../../ids.js';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('audit_entries', (t) => {
    t.jsonb('details').notNullable().defaultTo('{}'); // never a secret value
    t.index(['app_id', 'action', 'created_at']);
  });
  // Not per-app: actions on the whole installation or on an organization.
  await knex.schema.createTable('installation_audit_entries', (t) => {
    t.uuid('id').primary();
    t.text('action').notNullable();
    t.text('actor').notNullable();
    t.text('actor_kind').notNullable();
    t.text('actor_name');
    t.uuid('organization_id');
    t.jsonb('details').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['created_at']);
  });
  // Not per-app: the admin API's tokens (only SHA-256 hashes).
  await knex.schema.createTable('admin_tokens', (t) => {
    t.uuid('id').primary();
    t.text('token_hash').notNullable().unique();
    t.text('label').notNullable().defaultTo('');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }); // null: valid until a rotation or a retirement sets it
  });
  const old = await knex('server_settings').where({ key: 'admin_token_hash' }).first();
  if (old) {
    await knex('admin_tokens').insert({
      id: uuidv7(),
      token_hash: old.value,
      label: 'first start',
      created_at: knex.fn.now(),
    });
    await knex('server_settings').where({ key: 'admin_token_hash' }).delete();
  }
}

export async function down(knex: Knex): Promise<void> {
  const newest = await knex('admin_tokens')
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', knex.fn.now()))
    .orderBy('created_at', 'desc')
    .first();
  if (newest) {
    await knex('server_settings')
      .insert({ key: 'admin_token_hash', value: JSON.stringify(newest.token_hash) })
      .onConflict('key')
      .merge();
  }
  await knex.schema.dropTable('admin_tokens');
  await knex.schema.dropTable('installation_audit_entries');
  await knex.schema.alterTable('audit_entries', (t) => {
    t.dropIndex(['app_id', 'action', 'created_at']);
    t.dropColumn('details');
  });
}
