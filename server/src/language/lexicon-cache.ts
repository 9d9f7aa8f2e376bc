// The apps' lexicons, kept between questions: one cache per composition root (ServiceContext.lexicons),
// each lexicon checked against its app's fingerprint at most once a second and rebuilt when new
// events or users arrived, or after a few minutes whatever the fingerprint says.
import type { Db } from '../storage/handle.js';
import { Lexicon } from './lexicon.js';
import { lexiconFingerprint, loadLexiconData } from './queries/lexicon.js';

/** A cached lexicon is checked against the app's fingerprint at most this often. */
const RECHECK_MS = 1_000;
/** And rebuilt at least this often, whatever the fingerprint says (display names may change). */
const MAX_AGE_MS = 5 * 60_000;

interface CachedLexicon {
  fingerprint: string;
  checkedAt: number;
  builtAt: number;
  lexicon: Lexicon;
}

export class LexiconCache {
  private readonly apps = new Map<string, CachedLexicon>();

  /** How many apps' lexicons are cached. */
  get size(): number {
    return this.apps.size;
  }

  /** The app's lexicon, rebuilt when its events or users changed. */
  async get(db: Db, appId: string): Promise<Lexicon> {
    const now = Date.now();
    const hit = this.apps.get(appId);
    if (hit && now - hit.checkedAt < RECHECK_MS && now - hit.builtAt < MAX_AGE_MS) return hit.lexicon;
    const fingerprint = await lexiconFingerprint(db, appId);
    if (hit && hit.fingerprint === fingerprint && now - hit.builtAt < MAX_AGE_MS) {
      hit.checkedAt = now;
      return hit.lexicon;
    }
    const lexicon = new Lexicon(await loadLexiconData(db, appId));
    if (this.apps.size > 1_000) this.apps.clear();
    this.apps.set(appId, { fingerprint, checkedAt: now, builtAt: now, lexicon });
    return lexicon;
  }
}
