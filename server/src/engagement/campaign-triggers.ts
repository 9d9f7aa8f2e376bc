// Whether an app has trigger campaigns that may fire, cached per app for a few seconds, so the
// event writer adds its outbox statement to the ingestion transaction only for those apps (other
// apps' ingestion does not pay for campaigns). One cache per composition root
// (ServiceContext.triggerCampaigns, and the event writer's trigger hooks): campaign changes made
// through that root drop the entry at once; others' changes are seen within TTL_MS.

import type { Db } from '../storage/handle.js';
import { appHasTriggerCampaigns } from './queries/campaigns.js';

const TTL_MS = 5_000;

export class TriggerCampaigns {
  private readonly apps = new Map<string, { has: boolean; at: number }>();

  /** Drops the cached answer for an app (a trigger campaign was created, paused or resumed). */
  forget(appId: string): void {
    this.apps.delete(appId);
  }

  /** True when the app may have a trigger campaign waiting; `db` is the ingestion transaction. */
  async mayTrigger(db: Db, appId: string): Promise<boolean> {
    const now = Date.now();
    const hit = this.apps.get(appId);
    if (hit && now - hit.at < TTL_MS) return hit.has;
    const has = await appHasTriggerCampaigns(db, appId);
    if (this.apps.size > 10_000) this.apps.clear();
    this.apps.set(appId, { has, at: now });
    return has;
  }
}
