// Apps by id, kept in memory for the ingestion path (REST events and batches, and the website
// surface's origin check), so a request needs no query for its app. One per composition root (ServiceContext.apps). A change of an app's
// settings through a root (admin.ts changeApp) drops it there at once and, with Redis, everywhere
// (cache-bus.ts); otherwise other instances read it again within CACHE_TTL_MS.
import type { Db } from '../storage/handle.js';
import { type AppRow, findApp } from '../storage/tenancy.js';
import { CACHE_TTL_MS, type CacheBus } from './cache-bus.js';
import { TtlCache } from './ttl-cache.js';

export class AppCache {
  private readonly apps: TtlCache<AppRow | null>;

  constructor(
    clock: () => Date,
    private readonly bus?: CacheBus,
  ) {
    this.apps = new TtlCache(clock, CACHE_TTL_MS);
    bus?.onChange((change) => {
      if (change.kind === 'all') this.apps.clear();
      else if (change.kind === 'app') this.apps.delete(change.id);
    });
  }

  /** How many apps are cached. */
  get size(): number {
    return this.apps.size;
  }

  /** The app with this id (a UUID), from memory while fresh. Callers must not change the row. */
  async find(db: Db, id: string): Promise<AppRow | undefined> {
    return (await this.apps.get(id, async () => (await findApp(db, id)) ?? null)) ?? undefined;
  }

  /** The app's settings changed: read it again here, and tell the other instances. */
  forget(id: string): void {
    if (this.bus) this.bus.publish({ kind: 'app', id });
    else this.apps.delete(id);
  }
}
