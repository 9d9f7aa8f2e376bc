// Which app a request may use. A REST key works on its own app, an organization-wide key on any
// app of its organization, an MCP key on any app of its organization. Anything else is 404, so a
// caller never learns that another tenant's app exists.
import { NotFoundError, ValidationError } from '../errors.js';
import { isUuid } from '../ids.js';
import type { Db } from '../storage/handle.js';
import { type AppRow, findApp, listApps } from '../storage/tenancy.js';
import type { AppCache } from './app-cache.js';
import type { McpPrincipal, RestPrincipal } from './keys.js';

function appNotFound(appId: string): NotFoundError {
  return new NotFoundError(`No app with id ${appId} is available to this key.`);
}

/** The app a REST request acts on: `appId` when given (and allowed), else the key's own app. */
export async function appForRestKey(
  db: Db,
  principal: RestPrincipal,
  appId?: string,
  /** Read the app from this cache (the ingestion path) rather than the database. */
  cache?: AppCache,
): Promise<AppRow> {
  const wanted = appId ?? principal.appId;
  if (!isUuid(wanted)) throw appNotFound(wanted);
  if (wanted !== principal.appId && !principal.orgWide) throw appNotFound(wanted);
  const app = cache ? await cache.find(db, wanted) : await findApp(db, wanted);
  if (!app || app.organization_id !== principal.organizationId) throw appNotFound(wanted);
  return app;
}

/** The app an MCP request acts on; without `appId`, the organization's only app. */
export async function appForMcpKey(db: Db, principal: McpPrincipal, appId?: string): Promise<AppRow> {
  if (appId === undefined) {
    const apps = await listApps(db, principal.organizationId);
    if (apps.length === 1) return apps[0]!;
    if (apps.length === 0) throw new NotFoundError('This organization has no apps yet.');
    throw new ValidationError('This organization has several apps: pass app_id to choose one.', [
      { path: '/query/app_id', message: 'is required when the organization has more than one app' },
    ]);
  }
  const app = isUuid(appId) ? await findApp(db, appId) : undefined;
  if (!app || app.organization_id !== principal.organizationId) throw appNotFound(appId);
  return app;
}
