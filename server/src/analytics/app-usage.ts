// An organization's apps as MCP resources: the index of apps and audiences, an app with its usage
// totals and most frequent events, and its release history. Access (which apps a key may read) is
// decided by admin/access.ts before these run.

import { storedAudiences } from '../audiences/members.js';
import type { AudienceRow } from '../audiences/queries/audiences.js';
import type { ServiceContext } from '../context.js';
import { type AppRow, listApps } from '../storage/tenancy.js';
import { type AppTotals, type AppVersionRow, appTotals, listAppVersions, topEventNames } from './queries/app-usage.js';

/** How many event names the app resource lists. */
export const TOP_EVENTS = 10;

/** The organization's apps (oldest first) and their audiences (per app, newest first). */
export async function resourceIndex(
  ctx: ServiceContext,
  organizationId: string,
): Promise<{ apps: AppRow[]; audiences: AudienceRow[] }> {
  const apps = await listApps(ctx.db, organizationId);
  const audiences: AudienceRow[] = [];
  for (const app of apps) audiences.push(...(await storedAudiences(ctx, app.id)));
  return { apps, audiences };
}

/** An app's usage totals and most frequent events (bot traffic excluded). */
export async function appUsage(
  ctx: ServiceContext,
  app: AppRow,
): Promise<{ totals: AppTotals; topEvents: { name: string; count: number }[] }> {
  const timeoutMs = ctx.config.analyticsQueryTimeoutMs;
  const totals = await appTotals(ctx.db, app.id, timeoutMs);
  const topEvents = await topEventNames(ctx.db, app.id, TOP_EVENTS, timeoutMs);
  return { totals, topEvents };
}

/**
 * An app's versions, latest release first, kept to those released on or after `range.from` and on
 * or before `range.to` when given; the current version is the latest of all.
 */
export async function appVersionHistory(
  ctx: ServiceContext,
  app: AppRow,
  range: { from?: Date; to?: Date } = {},
): Promise<{ versions: AppVersionRow[]; current: string | null }> {
  const versions = await listAppVersions(ctx.db, app.id);
  const kept = versions.filter(
    (v) => (!range.from || v.released_at >= range.from) && (!range.to || v.released_at <= range.to),
  );
  return { versions: kept, current: versions[0]?.version ?? null };
}
