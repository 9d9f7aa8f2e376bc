// Data-protection requests on one user: erasure (everything stored about the user, in one
// transaction, with derived counts corrected) and export (everything stored about the user,
// produced page by page), each recorded in the app's audit trail without the data itself.
import type { UserErased } from '@tally/client';
import { recountAudiences } from '../audiences/audiences.js';
import type { ServiceContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { forgetAnswersAbout } from '../idempotency/idempotency.js';
import {
  type Actor,
  type AuditFilter,
  countAuditEntries,
  countInstallationAuditEntries,
  listAuditEntries,
  listInstallationAuditEntries,
  recordAppAction,
} from '../storage/audit.js';
import { inTransaction } from '../storage/handle.js';
import { findUserByIdentifier, listAliases, type UserRow } from '../storage/users.js';
import {
  deleteUserDedupRows,
  deleteUserRow,
  deleteUserRows,
  lockUserForErasure,
  markAudienceCountsStale,
  refreshEventDefinitions,
  subtractUserEventCounts,
} from './queries/erasure.js';
import { type ExportCursor, type ExportTable, userRecordsPage } from './queries/user-export.js';
import { EXPORT_VIEWS, type ExportSection, exportedAliasView, exportedUserView } from './views.js';

export type { Actor };

export type ErasedCounts = UserErased['erased'];

async function findUser(ctx: ServiceContext, appId: string, identifier: string): Promise<UserRow> {
  const user = await findUserByIdentifier(ctx.db, appId, identifier);
  if (!user) throw new NotFoundError(`No user with id "${identifier}" in this app.`);
  return user;
}

/**
 * Erases the user an identifier names (external id or alias) with everything stored about them,
 * in one transaction: aliases, events (and their dedup rows), visits, push subscriptions and
 * deliveries, the user row, the answers kept for Idempotency-Key retries that name the user, and
 * what the erasure hooks own (queued campaign sends). Event
 * dictionary volumes and daily counts lose the user's events; audience counts are recounted.
 */
export async function eraseUser(
  ctx: ServiceContext,
  appId: string,
  identifier: string,
  actor: Actor,
): Promise<ErasedCounts> {
  const counts = await inTransaction(ctx.db, async (tx) => {
    const user = await findUserByIdentifier(tx, appId, identifier);
    // Waits for event writes to this user to commit; a write after this point creates a new user.
    if (!user || !(await lockUserForErasure(tx, appId, user.id))) {
      throw new NotFoundError(`No user with id "${identifier}" in this app.`);
    }
    const queued = await ctx.erasureHooks.run(tx, appId, user.id);
    // Answers kept for Idempotency-Key retries may quote the user: by any of their identifiers.
    const aliases = (await listAliases(tx, appId, user.id)).map((a) => a.alias_id);
    await forgetAnswersAbout(tx, appId, [user.id, user.external_id, identifier, ...aliases]);
    await deleteUserDedupRows(tx, appId, user.id);
    const names = await subtractUserEventCounts(tx, appId, user.id);
    const erased: ErasedCounts = {
      users: 0,
      aliases: await deleteUserRows(tx, 'user_aliases', appId, user.id),
      events: await deleteUserRows(tx, 'events', appId, user.id),
      visits: await deleteUserRows(tx, 'visits', appId, user.id),
      push_subscriptions: await deleteUserRows(tx, 'push_subscriptions', appId, user.id),
      deliveries: await deleteUserRows(tx, 'push_deliveries', appId, user.id),
      queued_sends_cancelled: queued,
    };
    erased.users = await deleteUserRow(tx, appId, user.id);
    await refreshEventDefinitions(tx, appId, names);
    await markAudienceCountsStale(tx, appId);
    await recordAppAction(tx, {
      appId,
      action: 'user.erase',
      actor,
      at: ctx.clock(),
      userRef: identifier,
      counts: { ...erased },
    });
    return erased;
  });
  ctx.logger.info({ app_id: appId, actor: actor.id, erased: counts }, 'user erased');
  await recountAudiences(ctx, appId);
  return counts;
}

/** Records read per query of an export. */
export const EXPORT_PAGE_SIZE = 1_000;

/** Each section of the export after the user and aliases, in order, with the table its records come from. */
const SECTIONS: { [K in ExportSection]: ExportTable } = {
  events: 'events',
  visits: 'visits',
  push_subscriptions: 'push_subscriptions',
  deliveries: 'push_deliveries',
};

/** A started export: the user exists; `chunks` yields the JSON body piece by piece. */
export interface UserExportStream {
  chunks: AsyncGenerator<string, void, undefined>;
}

/**
 * Starts the export of the user an identifier names (404 before anything is sent when there is
 * none). The body (`UserExport`) is produced lazily, one page of records per chunk, each page a
 * separate short query; the audit entry is written when the body is finished or abandoned.
 */
export async function exportUser(
  ctx: ServiceContext,
  appId: string,
  identifier: string,
  actor: Actor,
): Promise<UserExportStream> {
  const user = await findUser(ctx, appId, identifier);
  return { chunks: exportChunks(ctx, appId, identifier, user, actor) };
}

async function* exportChunks(
  ctx: ServiceContext,
  appId: string,
  identifier: string,
  user: UserRow,
  actor: Actor,
): AsyncGenerator<string, void, undefined> {
  const counts: Record<string, number> = { users: 1, aliases: 0 };
  let completed = false;
  try {
    const aliases = (await listAliases(ctx.db, appId, user.id)).map(exportedAliasView);
    counts.aliases = aliases.length;
    const profile = exportedUserView(user);
    yield `{"success":true,"user":${JSON.stringify(profile)},"aliases":${JSON.stringify(aliases)}`;
    for (const name of Object.keys(SECTIONS) as ExportSection[]) {
      const view = EXPORT_VIEWS[name];
      counts[name] = 0;
      yield `,${JSON.stringify(name)}:[`;
      let after: ExportCursor | null = null;
      do {
        const page = await userRecordsPage(ctx.db, SECTIONS[name], appId, user.id, after, EXPORT_PAGE_SIZE);
        if (page.rows.length > 0) {
          const items = page.rows.map((r) => JSON.stringify(view(r, user))).join(',');
          yield counts[name] > 0 ? `,${items}` : items;
          counts[name] += page.rows.length;
        }
        after = page.next;
      } while (after);
      yield ']';
    }
    yield '}';
    completed = true;
  } finally {
    await recordAppAction(ctx.db, {
      appId,
      action: 'user.export',
      actor,
      at: ctx.clock(),
      userRef: identifier,
      counts,
      completed,
    }).catch((err) => ctx.logger.error({ err, app_id: appId }, 'could not record an export in the audit trail'));
  }
}

/** A page of the app's audit trail, newest first, optionally of one action. */
export async function auditTrail(ctx: ServiceContext, appId: string, filter: AuditFilter) {
  const [rows, total] = await Promise.all([
    listAuditEntries(ctx.db, appId, filter),
    countAuditEntries(ctx.db, appId, filter.action),
  ]);
  return { rows, total };
}

/** A page of the installation's audit trail (actions that belong to no single app), newest first. */
export async function installationAuditTrail(ctx: ServiceContext, filter: AuditFilter) {
  const [rows, total] = await Promise.all([
    listInstallationAuditEntries(ctx.db, filter),
    countInstallationAuditEntries(ctx.db, filter.action),
  ]);
  return { rows, total };
}
