// "The 3 biggest spenders in May", "our top spenders", "the smallest spenders": a ranking of users
// by the money they spent, read as "top 3 users by revenue". A "spender" with no ranking word stays
// a refusal (criteria.ts refuseErrors): "spenders" alone says no amount.
import { isRole } from './clause.js';
import type { Tagged } from './mentions.js';

const HIGH = ['agg:max', 'most', 'top'];
const LOW = ['agg:min', 'least', 'bottom'];

/** The mentions with each ranked "spenders" rewritten as "top N users by revenue". */
export function rankSpenders(ms: Tagged[]): Tagged[] {
  const out: Tagged[] = [];
  for (let i = 0; i < ms.length; i++) {
    const m = ms[i]!;
    if (!isRole(m, 'spender')) {
      out.push(m);
      continue;
    }
    // "biggest spenders", "3 biggest spenders", "biggest 3 spenders"
    let k = out.length - 1;
    const number = out[k]?.kind === 'number' ? out[k] : undefined;
    if (number) k--;
    const rank = out[k];
    if (!rank || !isRole(rank, ...HIGH, ...LOW)) {
      out.push(m);
      continue;
    }
    const before = out[k - 1]?.kind === 'number' && !number ? out[k - 1] : undefined;
    const n = number ?? before;
    out.splice(before ? k - 1 : k);
    const at = { start: rank.start, end: m.end };
    const role = (r: string, raw: string): Tagged => ({ kind: 'role', role: r, raw, ...at });
    out.push(role(HIGH.includes(roleName(rank)) ? 'top' : 'bottom', rank.raw));
    if (n) out.push(n);
    out.push(role('users', m.raw), role('by', m.raw), role('money', m.raw));
  }
  return out;
}

const roleName = (m: Tagged) => (m.kind === 'role' ? m.role : '');
