// Reading mentions: the role a mention plays, the app's names it holds (events, keys, values),
// fillers, and marking a run of mentions as read. Shared by every part of both parsers.
import type { Target } from './lexicon.js';
import type { Tagged } from './mentions.js';
import { FILLERS } from './words.js';

export const isRole = (m: Tagged | undefined, ...roles: string[]): boolean =>
  m?.kind === 'role' && (roles.length === 0 || roles.includes(m.role));
export const roleOf = (m: Tagged | undefined): string => (m?.kind === 'role' ? m.role : '');
export const targetsOf = (m: Tagged | undefined, kind?: Target['kind']): Target[] =>
  m?.kind === 'target' ? m.targets.filter((t) => kind === undefined || t.kind === kind) : [];
export const isFiller = (m: Tagged | undefined): boolean =>
  !!m &&
  ((m.kind === 'word' && FILLERS.has(m.word)) ||
    (m.kind === 'symbol' && [',', '.', '?', '!', ';', ':'].includes(m.text)));

/** Events named by a mention (events, or the events of "buyers"). */
export function eventsOf(m: Tagged | undefined): string[] | null {
  const t = targetsOf(m).filter((x) => x.kind === 'event' || x.kind === 'agent');
  if (t.length === 0) return null;
  return [...new Set(t.flatMap((x) => (x.kind === 'event' || x.kind === 'agent' ? x.events : [])))];
}

/** Marks mentions a to b (inclusive) as read. */
export function markUsed(ms: Tagged[], a: number, b: number) {
  for (let k = a; k <= b; k++) if (ms[k]) ms[k]!.used = true;
}
