// Which web origins may call an app's website endpoints: the origin of its website_url, or a host
// listed in its authorized_domains (`*.example.com` matches any real subdomain, not the bare
// domain, and never a host with an empty label such as `.example.com`).

import type { ServiceContext } from '../context.js';
import { isUuid } from '../ids.js';
import type { AppRow } from '../storage/tenancy.js';
import { appsForHost } from './queries/website.js';

function parse(value: string): URL | null {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

/** The calling page's origin: the Origin header, else the origin of the Referer; null if neither. */
export function callerOrigin(origin: string | undefined, referer: string | undefined): string | null {
  if (origin !== undefined) return origin === 'null' ? null : (parse(origin)?.origin ?? null);
  if (referer !== undefined) return parse(referer)?.origin ?? null;
  return null;
}

/** An authorized_domains entry as a bare lower-case host (a scheme or path typed by mistake is dropped). */
function domainEntry(entry: string): string {
  const e = entry.trim().toLowerCase();
  if (e.includes('://')) return parse(e)?.host ?? e;
  return e.replace(/\/.*$/, '');
}

/** A host name whose labels are all non-empty: no leading, trailing or doubled dot. */
function wellFormed(hostname: string): boolean {
  return hostname !== '' && hostname.split('.').every((label) => label !== '');
}

function hostMatches(entry: string, url: URL): boolean {
  if (!wellFormed(url.hostname)) return false;
  const d = domainEntry(entry);
  if (d.startsWith('*.')) {
    // "*.example.com" or "*.example.com:8443": one or more labels in front of the base domain.
    const [, base = '', port] = /^\*\.([^:]*)(?::(\d+))?$/.exec(d) ?? [];
    if (!wellFormed(base) || (port !== undefined && url.port !== port)) return false;
    return url.hostname.length > base.length + 1 && url.hostname.endsWith(`.${base}`);
  }
  return d === url.hostname || d === url.host;
}

export function originAllowed(app: Pick<AppRow, 'website_url' | 'authorized_domains'>, origin: string | null): boolean {
  if (origin === null) return false;
  const url = parse(origin);
  if (!url) return false;
  if (app.website_url) {
    const site = parse(app.website_url);
    if (site && site.origin === url.origin) return true;
  }
  return (app.authorized_domains ?? []).some((d) => typeof d === 'string' && hostMatches(d, url));
}

/** authorized_domains entries that could match this origin's host, for a narrow database lookup. */
export function domainCandidates(origin: string): { hostname: string; entries: string[] } | null {
  const url = parse(origin);
  if (!url) return null;
  const labels = url.hostname.split('.');
  const entries = [url.hostname, url.host];
  for (let i = 1; i < labels.length; i++) entries.push(`*.${labels.slice(i).join('.')}`);
  return { hostname: url.hostname, entries };
}

/**
 * What a website request may do: the app it names (a UUID, else none, read from the root's app
 * cache) and whether its origin is allowed.
 */
export async function websiteAccess(
  ctx: Pick<ServiceContext, 'db' | 'apps'>,
  appId: string | undefined,
  origin: string | null,
): Promise<{ appId: string | undefined; app: AppRow | undefined; origin: string | null; allowed: boolean }> {
  const app = appId !== undefined && isUuid(appId) ? await ctx.apps.find(ctx.db, appId) : undefined;
  return { appId, app, origin, allowed: app !== undefined && originAllowed(app, origin) };
}

/** A preflight names no app: it is answered for origins that some app allows. */
export async function someAppAllows(ctx: Pick<ServiceContext, 'db'>, origin: string | null): Promise<boolean> {
  if (origin === null) return false;
  const candidates = domainCandidates(origin);
  if (!candidates) return false;
  const apps = await appsForHost(ctx.db, candidates.hostname, candidates.entries);
  return apps.some((app) => originAllowed(app, origin));
}
