// Organization facts other services and handlers need: its time zone, its profile.

import type { ServiceContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { findOrganization, type OrganizationRow } from '../storage/tenancy.js';

/** The organization's time zone (UTC unless set): metrics, periods and schedules are read in it. */
export async function timeZoneOf(ctx: Pick<ServiceContext, 'db'>, organizationId: string): Promise<string> {
  return (await findOrganization(ctx.db, organizationId))?.timezone || 'UTC';
}

/** An organization that must exist (it owns a live key). */
export async function organization(ctx: Pick<ServiceContext, 'db'>, organizationId: string): Promise<OrganizationRow> {
  const org = await findOrganization(ctx.db, organizationId);
  if (!org) throw new NotFoundError(`No organization with id ${organizationId}.`);
  return org;
}
