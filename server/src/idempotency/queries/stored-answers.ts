// Queries of the idempotency keys (table idempotency_keys, migration 025): claim a key, store or
// drop its answer, read it back, and forget answers that expired or that name an erased user.
// Every query filters by app id.
import type { Knex } from 'knex';

/** Who may see a key: the app, the API key and the operation it was sent to. */
export interface KeyScope {
  appId: string;
  apiKeyId: string;
  operation: string;
  key: string;
}

export interface StoredAnswerRow {
  app_id: string;
  api_key_id: string;
  operation: string;
  key: string;
  fingerprint: string;
  run_id: string;
  state: 'running' | 'done';
  lease_until: Date;
  status: number | null;
  headers: Record<string, string> | null;
  body: string | null;
  subjects: string[];
  created_at: Date;
  expires_at: Date;
}

const pk = (s: KeyScope) => ({ app_id: s.appId, api_key_id: s.apiKeyId, operation: s.operation, key: s.key });

/**
 * Takes the key for a new run: inserts its row, or takes over a row that expired, or one still
 * `running` for the same body whose lease ran out (its request died with its process). Returns
 * whether this run now holds the key; when not, the row as it stands says why.
 */
export async function claimKey(
  db: Knex,
  scope: KeyScope,
  run: { runId: string; fingerprint: string; now: Date; leaseUntil: Date; expiresAt: Date },
): Promise<{ claimed: true } | { claimed: false; row: StoredAnswerRow | undefined }> {
  const { rows } = await db.raw(
    `insert into idempotency_keys as k
       (app_id, api_key_id, operation, key, fingerprint, run_id, state, lease_until, subjects, created_at, expires_at)
     values (?::uuid, ?::uuid, ?, ?, ?, ?::uuid, 'running', ?, '{}', ?, ?)
     on conflict (app_id, api_key_id, operation, key) do update set
       fingerprint = excluded.fingerprint, run_id = excluded.run_id, state = 'running',
       lease_until = excluded.lease_until, status = null, headers = null, body = null, subjects = '{}',
       created_at = excluded.created_at, expires_at = excluded.expires_at
     where k.expires_at <= ?
        or (k.state = 'running' and k.lease_until <= ? and k.fingerprint = excluded.fingerprint)
     returning run_id`,
    [
      scope.appId,
      scope.apiKeyId,
      scope.operation,
      scope.key,
      run.fingerprint,
      run.runId,
      run.leaseUntil,
      run.now,
      run.expiresAt,
      run.now,
      run.now,
    ],
  );
  if ((rows as unknown[]).length > 0) return { claimed: true };
  const row = await db<StoredAnswerRow>('idempotency_keys').where(pk(scope)).first();
  return { claimed: false, row };
}

/** Stores the run's answer (only while the run still holds the key); returns whether it did. */
export async function storeAnswer(
  db: Knex,
  scope: KeyScope,
  runId: string,
  answer: { status: number; headers: Record<string, string>; body: string; subjects: string[] },
): Promise<boolean> {
  const n = await db('idempotency_keys')
    .where({ ...pk(scope), run_id: runId, state: 'running' })
    .update({
      state: 'done',
      status: answer.status,
      headers: JSON.stringify(answer.headers),
      body: answer.body,
      subjects: answer.subjects,
    });
  return n > 0;
}

/** Lets go of the key without an answer (the run failed): the next request with it runs afresh. */
export async function dropClaim(db: Knex, scope: KeyScope, runId: string): Promise<void> {
  await db('idempotency_keys')
    .where({ ...pk(scope), run_id: runId, state: 'running' })
    .delete();
}

/**
 * The app's internal user ids named by these identifiers (external ids or aliases), to link an
 * answer to its users even after they are renamed.
 */
export async function internalUserIds(db: Knex, appId: string, identifiers: string[]): Promise<string[]> {
  if (identifiers.length === 0) return [];
  const { rows } = await db.raw(
    `select id::text as id from users where app_id = ?::uuid and external_id = any(?::text[])
     union
     select user_id::text from user_aliases where app_id = ?::uuid and alias_id = any(?::text[])`,
    [appId, identifiers, appId, identifiers],
  );
  return (rows as { id: string }[]).map((r) => r.id);
}

/** Deletes the app's stored answers that name any of these subjects; returns how many. */
export async function deleteAnswersNaming(db: Knex, appId: string, subjects: string[]): Promise<number> {
  const { rowCount } = await db.raw(`delete from idempotency_keys where app_id = ?::uuid and subjects && ?::text[]`, [
    appId,
    subjects,
  ]);
  return Number(rowCount ?? 0);
}

/** Deletes the app's keys that expired before `now`; returns how many. */
export async function deleteExpiredKeys(db: Knex, appId: string, now: Date): Promise<number> {
  return db('idempotency_keys').where({ app_id: appId }).andWhere('expires_at', '<=', now).delete();
}
