// The per-app lexicon: the app's own vocabulary (event names and display names, event and user
// property keys, their frequent values), indexed as phrases of base forms so that "bought",
// "orders" and "purchases" all find the `purchase` event, "iPhone" finds platform `ios` and
// "Germany" finds country `DE`. Word forms come from wink-lemmatizer (WordNet's morphology);
// typos are corrected against the lexicon with fastest-levenshtein, but only for words that are
// not English words (wink-lexicon's word list), so "gold" is never read as "good".
import { distance } from 'fastest-levenshtein';
import lemmatizer from 'wink-lemmatizer';
import englishWords from 'wink-lexicon/src/wn-words.js';
import {
  AGENTS,
  COUNTRIES,
  EVENT_SYNONYMS,
  FILLERS,
  GENERIC_NAME_WORDS,
  KEY_SYNONYMS,
  MONEY_KEYS,
  SKIPPABLE,
  VALUE_GROUPS,
  VALUE_SYNONYMS,
} from './words.js';

export interface PropertyStats {
  key: string;
  /** JSON types seen for the key. */
  numeric: boolean;
  text: boolean;
  boolean: boolean;
  array: boolean;
  /** How many sampled rows carry the key. */
  count: number;
  /** Frequent text values (array elements included), most frequent first. */
  values: { value: string; count: number }[];
  /** True when `values` lists every value seen. */
  complete: boolean;
}

export interface EventStats {
  name: string;
  displayName: string | null;
  volume: number;
  /** ISO 8601 time of the first event, or null. */
  firstSeen: string | null;
  properties: PropertyStats[];
}

/** What storage reads for one app (language/queries/lexicon.ts). */
export interface LexiconData {
  events: EventStats[];
  userProperties: PropertyStats[];
  users: number;
}

export type Target =
  | { kind: 'event'; events: string[] }
  /** Users who did the event ("buyers"). */
  | { kind: 'agent'; events: string[] }
  | { kind: 'key'; key: string }
  | { kind: 'value'; key: string; values: string[] }
  | { kind: 'field'; field: 'email' | 'phone' | 'user_id' };

export interface Entry {
  words: Set<string>[];
  target: Target;
  /** Exact spelling required (values that are also English words: "IN", "US"). */
  exact?: string;
  /** Lower is preferred among entries of the same length. */
  rank: number;
}

const formsCache = new Map<string, string[]>();
const ENGLISH = englishWords as Record<string, number>;

/** The base forms of a word: itself, its noun, verb and adjective lemmas, a plain singular. */
export function forms(word: string): string[] {
  const cached = formsCache.get(word);
  if (cached) return cached;
  const out = new Set([word]);
  if (/^[a-z]+$/.test(word) && word.length > 2) {
    out.add(lemmatizer.noun(word));
    out.add(lemmatizer.verb(word));
    out.add(lemmatizer.adjective(word));
    if (word.endsWith('s') && !word.endsWith('ss') && word.length > 2)
      out.add(word.replace(/(?<=[^aeiou])ies$/, 'y').replace(/s$/, ''));
  }
  const list = [...out];
  if (formsCache.size < 50_000) formsCache.set(word, list);
  return list;
}

export const isEnglish = (word: string) => forms(word).some((f) => ENGLISH[f] !== undefined);

/** Splits a name into lower-case words: "add_to_cart", "addToCart", "Add to cart" -> add, to, cart. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

const PARTICLES = ['up', 'in', 'out', 'on', 'off'];

export class Lexicon {
  readonly events: EventStats[];
  readonly userProperties: Map<string, PropertyStats>;
  readonly users: number;
  /** The property that holds money (revenue, else amount, ...), or null. */
  readonly moneyKey: string | null;
  private readonly byFirst = new Map<string, Entry[]>();
  private readonly eventProps = new Map<string, Map<string, PropertyStats>>();
  private readonly vocabulary = new Set<string>();

  constructor(data: LexiconData) {
    this.events = [...data.events].sort((a, b) => b.volume - a.volume || (a.name < b.name ? -1 : 1));
    this.users = data.users;
    this.userProperties = new Map(data.userProperties.map((p) => [p.key, p]));
    for (const e of this.events) this.eventProps.set(e.name, new Map(e.properties.map((p) => [p.key, p])));
    this.moneyKey =
      MONEY_KEYS.find((k) => this.events.some((e) => this.eventProps.get(e.name)!.get(k)?.numeric)) ?? null;
    this.indexEvents();
    this.indexKeys();
    this.indexValues();
  }

  /** Stats of a property on one event. */
  eventProperty(event: string, key: string): PropertyStats | undefined {
    return this.eventProps.get(event)?.get(key);
  }

  /** Events that carry a property. */
  eventsWithKey(key: string): string[] {
    return this.events.filter((e) => this.eventProps.get(e.name)!.has(key)).map((e) => e.name);
  }

  hasEvent(name: string): boolean {
    return this.eventProps.has(name);
  }

  /** Every property key known on events or users. */
  keys(): string[] {
    const keys = new Set<string>(this.userProperties.keys());
    for (const p of this.eventProps.values()) for (const k of p.keys()) keys.add(k);
    return [...keys].sort();
  }

  /** Whether a word is part of the app's vocabulary (then it is not a typo). */
  knows(word: string): boolean {
    return forms(word).some((f) => this.vocabulary.has(f));
  }

  /** The entries starting at a word form. */
  entriesFor(form: string): Entry[] {
    return this.byFirst.get(form) ?? [];
  }

  /** What a quoted name refers to: an event, a property key or a value (case-insensitive). */
  quoted(text: string): Target[] {
    const lower = text.toLowerCase();
    const events = this.events.filter((e) => e.name.toLowerCase() === lower);
    if (events.length > 0) {
      const exact = events.find((e) => e.name === text);
      return [{ kind: 'event', events: [exact ? exact.name : events[0]!.name] }];
    }
    const keys = this.keys().filter((k) => k.toLowerCase() === lower);
    if (keys.length > 0) return keys.map((key) => ({ kind: 'key', key }));
    const out: Target[] = [];
    for (const p of this.allProperties()) {
      const v = p.values.find((x) => x.value.toLowerCase() === lower);
      if (v && !out.some((t) => t.kind === 'value' && t.key === p.key))
        out.push({ kind: 'value', key: p.key, values: [v.value] });
    }
    return out;
  }

  /**
   * The closest lexicon word to a misspelt one, when there is exactly one close enough. Two letters
   * swapped ("veiws", "revneue") count as one mistake, as in Damerau's distance.
   */
  correct(word: string, extra: Iterable<string>): string | null {
    if (word.length < 4 || isEnglish(word) || !/^[a-z]+$/.test(word)) return null;
    const limit = word.length >= 8 ? 2 : 1;
    let best: string | null = null;
    let bestDistance = limit + 1;
    let tie = false;
    const base = (w: string) => forms(w).sort()[0]!;
    for (const candidate of [...this.vocabulary, ...extra]) {
      if (Math.abs(candidate.length - word.length) > limit || candidate.length < 4) continue;
      const d = swapped(word, candidate) ? 1 : distance(word, candidate);
      if (d < bestDistance) {
        best = candidate;
        bestDistance = d;
        tie = false;
      } else if (d === bestDistance && candidate !== best && (best === null || base(candidate) !== base(best)))
        tie = true;
    }
    return best && !tie && bestDistance <= limit ? best : null;
  }

  /** Names close to a word, for refusals: events, property keys and values. */
  closest(word: string, max = 3): string[] {
    if (word.length > 40) return [];
    const names = new Set<string>([...this.events.map((e) => e.name), ...this.keys()]);
    for (const p of this.allProperties()) for (const v of p.values.slice(0, 20)) names.add(v.value);
    const scored = [...names]
      .map((n) => ({ n, d: distance(word.toLowerCase(), n.toLowerCase()) / Math.max(word.length, n.length) }))
      .filter((x) => x.d <= 0.5)
      .sort((a, b) => a.d - b.d || (a.n < b.n ? -1 : 1));
    return scored.slice(0, max).map((x) => x.n);
  }

  *allProperties(): Iterable<PropertyStats> {
    for (const p of this.userProperties.values()) yield p;
    for (const m of this.eventProps.values()) yield* m.values();
  }

  private add(words: string[], target: Target, rank: number, exact?: string) {
    if (words.length === 0) return;
    const entry: Entry = { words: words.map((w) => new Set(forms(w))), target, rank, ...(exact ? { exact } : {}) };
    for (const w of words) {
      for (const f of forms(w)) {
        this.vocabulary.add(f);
        if (/^[a-z]{3,}$/.test(f) && !f.endsWith('s')) this.vocabulary.add(`${f}s`);
      }
    }
    for (const f of entry.words[0]!) {
      const list = this.byFirst.get(f) ?? [];
      if (!list.some((e) => sameEntry(e, entry))) list.push(entry);
      this.byFirst.set(f, list);
    }
  }

  private indexEvents() {
    const wordsOf = new Map(this.events.map((e) => [e.name, nameWords(e.name)]));
    const owners = new Map<string, string[]>();
    for (const [name, words] of wordsOf) {
      for (const w of words) for (const f of forms(w)) owners.set(f, [...new Set([...(owners.get(f) ?? []), name])]);
    }
    const ownedBy = (w: string) => [...new Set(forms(w).flatMap((f) => owners.get(f) ?? []))];
    for (const e of this.events) {
      const target: Target = { kind: 'event', events: [e.name] };
      const words = wordsOf.get(e.name)!;
      this.add(words, target, 0);
      if (words.length === 2) this.add([words[1]!, words[0]!], target, 1);
      if (e.displayName) this.add(nameWords(e.displayName), target, 0);
      // "signup" is also written "sign up", "login" "log in"
      for (const w of words) {
        for (const p of PARTICLES) {
          if (w.endsWith(p) && w.length > p.length + 2 && ENGLISH[w.slice(0, -p.length)] !== undefined) {
            this.add(
              words.flatMap((x) => (x === w ? [w.slice(0, -p.length), p] : [x])),
              target,
              0,
            );
          }
        }
      }
      const distinctive = words.filter((w) => !GENERIC_NAME_WORDS.has(w) && ownedBy(w).length === 1);
      for (const w of words.length > 1 ? distinctive : []) this.add([w], target, 2);
      for (const w of distinctive) {
        const group = EVENT_SYNONYMS.find((g) => g.some((s) => forms(w).includes(s)));
        for (const s of group ?? []) {
          if (ownedBy(s).length > 0) continue;
          this.add([s], target, 3);
          if (words.length > 1)
            this.add(
              words.map((x) => (x === w ? s : x)),
              target,
              3,
            );
        }
        for (const [agent, concept] of Object.entries(AGENTS)) {
          if (group?.includes(concept) || forms(w).includes(concept))
            this.add([agent], { kind: 'agent', events: [e.name] }, 2);
        }
      }
    }
  }

  private indexKeys() {
    for (const key of this.keys()) {
      const target: Target = { kind: 'key', key };
      this.add(nameWords(key), target, 0);
      for (const synonym of KEY_SYNONYMS[key.toLowerCase()] ?? []) this.add(synonym.split(' '), target, 1);
    }
    this.add(['email'], { kind: 'field', field: 'email' }, 1);
    this.add(['e', 'mail'], { kind: 'field', field: 'email' }, 1);
    this.add(['email', 'address'], { kind: 'field', field: 'email' }, 1);
    this.add(['phone'], { kind: 'field', field: 'phone' }, 1);
    this.add(['phone', 'number'], { kind: 'field', field: 'phone' }, 1);
    this.add(['user', 'id'], { kind: 'field', field: 'user_id' }, 1);
  }

  private indexValues() {
    const seen = new Map<string, Map<string, Set<string>>>();
    const note = (key: string, value: string) => {
      const byKey = seen.get(key) ?? new Map<string, Set<string>>();
      byKey.set(value.toLowerCase(), (byKey.get(value.toLowerCase()) ?? new Set()).add(value));
      seen.set(key, byKey);
    };
    for (const p of this.allProperties()) for (const v of p.values) if (v.value.length <= 60) note(p.key, v.value);
    for (const [key, byLower] of seen) {
      const spellings = (lower: string) => [...(byLower.get(lower) ?? [])];
      for (const [lower, originals] of byLower) {
        const words = nameWords(lower);
        if (words.length === 0 || words.length > 6) continue;
        const target: Target = { kind: 'value', key, values: [...originals] };
        const original = [...originals][0]!;
        // Values that are also everyday words ("IN", "US") count only as written.
        const common = words.length === 1 && (FILLERS.has(lower) || lower === 'no' || lower.length < 2);
        // a lower-case value that is also a common word ("a", "in") is only read after its key
        if (common && original === lower) continue;
        const exact = common ? original : undefined;
        this.add(words, target, 0, exact);
        for (const name of COUNTRIES[original.toUpperCase()] && original.length === 2
          ? COUNTRIES[original.toUpperCase()]!
          : []) {
          this.add(name.split(/[\s.]+/).filter(Boolean), target, 1);
        }
        for (const synonym of VALUE_SYNONYMS[lower] ?? []) this.add([synonym], target, 1);
      }
      for (const [word, members] of Object.entries(VALUE_GROUPS)) {
        const values = members.flatMap(spellings);
        if (values.length === members.length) this.add([word], { kind: 'value', key, values }, 1);
      }
    }
  }
}

function sameEntry(a: Entry, b: Entry): boolean {
  return (
    a.words.length === b.words.length &&
    a.words.every((w, i) => [...w].join() === [...b.words[i]!].join()) &&
    JSON.stringify(a.target) === JSON.stringify(b.target)
  );
}

export { SKIPPABLE };

/** Whether two words differ only by two neighbouring letters swapped ("veiws" and "views"). */
function swapped(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return i < a.length - 1 && a[i] === b[i + 1] && a[i + 1] === b[i] && a.slice(i + 2) === b.slice(i + 2);
}
