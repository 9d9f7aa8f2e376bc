// Whether an app has trigger campaigns that may fire, cached per app for a few seconds, so the
// event writer adds its outbox statement to the ingestion transaction only for those apps (other
// apps' ingestion does not pay for campaigns). Campaign changes in this process drop the entry at
// once; another instance's changes are seen within TTL_MS.

import type { Db } from '../storage/handle.js';
import { appHasTriggerCampaigns } from './queries/campaigns.js';

const TTL_MS = 5_000;
const cache = new Map<string, { has: boolean; at: number }>();

/** Drops the cached answer for an app (a trigger campaign was created, paused or resumed). */
export function forgetTriggerCampaigns(appId: string): void {
  cache.delete(appId);
}

/** True when the app may have a trigger campaign waiting; `db` is the ingestion transaction. */
export async function mayTrigger(db: Db, appId: string): Promise<boolean> {
  const now = Date.now();
  const hit = cache.get(appId);
  if (hit && now - hit.at < TTL_MS) return hit.has;
  const has = await appHasTriggerCampaigns(db, appId);
  if (cache.size > 10_000) cache.clear();
  cache.set(appId, { has, at: now });
  return has;
}
