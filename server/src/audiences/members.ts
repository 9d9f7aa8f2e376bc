// Audiences as MCP resources: an app's audiences with current counts, and one audience of the
// organization with its first members. Audiences are read through their storage functions and the
// audience service; nothing here evaluates criteria itself.

import type { ServiceContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { isUuid } from '../ids.js';
import { type AppRow, listApps } from '../storage/tenancy.js';
import { type AudienceMember, audienceMembers, listAudiencesPage } from './audiences.js';
import { type AudienceRow, findAudience, listAudiences } from './queries/audiences.js';

/** Members listed by the audience detail. */
export const DETAIL_MEMBERS = 100;
const PAGE = 100;
const MEMBER_PAGE = 10_000;
const STORED_PAGE = 500;

/** Every audience of the app, newest first, with counts recomputed when stale. */
export async function appAudiences(ctx: ServiceContext, appId: string): Promise<AudienceRow[]> {
  const all: AudienceRow[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const { audiences, total } = await listAudiencesPage(ctx, appId, { limit: PAGE, offset });
    all.push(...audiences);
    if (audiences.length < PAGE || offset + PAGE >= total) return all;
  }
}

/** Every audience of an app, newest first, as stored (counts are not recomputed). */
export async function storedAudiences(ctx: ServiceContext, appId: string): Promise<AudienceRow[]> {
  const all: AudienceRow[] = [];
  for (let offset = 0; ; offset += STORED_PAGE) {
    const page = await listAudiences(ctx.db, appId, STORED_PAGE, offset);
    all.push(...page);
    if (page.length < STORED_PAGE) return all;
  }
}

/** The app's audience with this id as stored, or undefined (an id that is not a UUID finds none). */
export async function findAppAudience(
  ctx: ServiceContext,
  appId: string,
  audienceId: string,
): Promise<AudienceRow | undefined> {
  return isUuid(audienceId) ? await findAudience(ctx.db, appId, audienceId) : undefined;
}

/** An audience of one of the organization's apps, with its first members and their number. */
export async function organizationAudience(
  ctx: ServiceContext,
  organizationId: string,
  audienceId: string,
): Promise<{ audience: AudienceRow; users: AudienceMember[]; total: number }> {
  const audience = isUuid(audienceId) ? await findOrganizationAudience(ctx, organizationId, audienceId) : undefined;
  if (!audience) throw new NotFoundError(`No audience with id "${audienceId}" is available to this key.`);
  const { users, total } = await audienceMembers(ctx, audience.app_id, audience.id, {
    limit: DETAIL_MEMBERS,
    offset: 0,
  });
  return { audience, users, total };
}

async function findOrganizationAudience(ctx: ServiceContext, organizationId: string, audienceId: string) {
  const apps: AppRow[] = await listApps(ctx.db, organizationId);
  for (const app of apps) {
    const found = await findAudience(ctx.db, app.id, audienceId);
    if (found) return found;
  }
  return undefined;
}

/** The external ids of all current members of an audience of the app. */
export async function allMemberIds(ctx: ServiceContext, appId: string, audienceId: string): Promise<string[]> {
  const ids: string[] = [];
  for (let offset = 0; ; offset += MEMBER_PAGE) {
    const { users, total } = await audienceMembers(ctx, appId, audienceId, { limit: MEMBER_PAGE, offset });
    ids.push(...users.map((u) => u.user_id));
    if (users.length < MEMBER_PAGE || offset + MEMBER_PAGE >= total) return ids;
  }
}
