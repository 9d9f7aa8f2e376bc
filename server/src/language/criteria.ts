// Audience criteria -> a condition on users. The text is cut into clauses at "who", "whose",
// "with", "and", "but", commas and "or" (not between two values of one property: "France or
// Germany" stays one clause), with parentheses and "not (...)" for grouping; each clause is read
// by `clauseCondition`: an action (did an event, with filters, a number of times, a total, a
// period), activity, first seen, email or phone, or user properties.
import type { Condition } from './ast.js';
import { and, isRole, not, roleOf, targetsOf } from './clause.js';
import { clauseCondition, isSubject } from './clause-condition.js';
import type { Lexicon } from './lexicon.js';
import type { Reading, Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';

const BOUNDARY_ROLES = new Set(['rel', 'which', 'whose', 'where', 'with', 'and', 'but', 'or']);

/** Reads criteria into a condition; throws NotUnderstood. */
export function parseCriteria(reading: Reading, lexicon: Lexicon): Condition {
  const ms = reading.mentions.filter(
    (m) => !(m.kind === 'symbol' && (m.text === '.' || m.text === '?' || m.text === '!')),
  );
  refuseErrors(ms);
  if (ms.length === 0) throw new NotUnderstood('The criteria are empty.');
  const parser = new Structure(ms, lexicon);
  const c = parser.expression();
  if (parser.pos < ms.length)
    throw new NotUnderstood(`I understood the criteria up to "${ms[parser.pos]!.raw}" but not from there.`, [
      ms[parser.pos]!.raw,
    ]);
  return c;
}

export function refuseErrors(ms: Tagged[]) {
  for (const m of ms) {
    if (m.kind === 'period_error') throw new NotUnderstood(`"${m.raw}": ${m.reason}.`, [m.raw]);
    if (m.kind === 'role' && (m.role === 'unsupported' || m.role === 'will')) {
      throw new NotUnderstood(`"${m.raw}" is not something Tally can answer from past events.`, [m.raw]);
    }
    if (m.kind === 'role' && m.role === 'vague_time')
      throw new NotUnderstood(`"${m.raw}" is vague: give a period, e.g. "in the last 7 days".`, [m.raw]);
    if (m.kind === 'role' && m.role === 'spender')
      throw new NotUnderstood(`"${m.raw}": say how much, e.g. "users who spent more than $100".`, [m.raw]);
  }
}

class Structure {
  pos = 0;
  private depth = 0;
  private previousEvents: string[] | undefined;
  private previous: Condition | undefined;

  constructor(
    private readonly ms: Tagged[],
    private readonly lexicon: Lexicon,
  ) {}

  private peek(k = 0) {
    return this.ms[this.pos + k];
  }
  private isSymbol(text: string, k = 0) {
    const m = this.peek(k);
    return m?.kind === 'symbol' && m.text === text;
  }

  expression(): Condition {
    const parts = [this.term()];
    while (isRole(this.peek(), 'or') && this.boundary(this.pos)) {
      this.pos++;
      parts.push(this.term());
    }
    return parts.length === 1 ? parts[0]! : { type: 'or', of: parts };
  }

  private term(): Condition {
    const parts = [this.factor()];
    for (;;) {
      const m = this.peek();
      if (!m || this.isSymbol(')') || (isRole(m, 'or') && this.boundary(this.pos))) break;
      if (this.isSymbol(',') || isRole(m, 'and', 'but')) {
        this.pos++;
        continue;
      }
      parts.push(this.factor());
    }
    return and(parts);
  }

  private factor(): Condition {
    if (isRole(this.peek(), 'not') && this.isSymbol('(', 1)) {
      this.pos++;
      return not(this.group());
    }
    if (this.isSymbol('(')) return this.group();
    // leading subject words, "who", "that"
    return this.clause();
  }

  private group(): Condition {
    if (++this.depth > 20) throw new NotUnderstood('Parentheses are nested more than 20 deep.');
    this.pos++;
    const inner = this.expression();
    this.depth--;
    if (!this.isSymbol(')')) throw new NotUnderstood('A parenthesis is not closed.', ['(']);
    this.pos++;
    return inner;
  }

  /** Whether the connector at i separates clauses (not two values of one property, nor "between 2 and 4"). */
  boundary(i: number): boolean {
    const before = this.ms[i - 1];
    const after = this.ms[i + 1];
    if (!after) return true;
    // "that month": the period of the clause before, not a new clause
    if (isRole(this.ms[i], 'rel') && this.ms[i]!.raw.toLowerCase() === 'that' && roleOf(after).startsWith('unit:'))
      return false;
    const keys = (m: Tagged | undefined) => new Set(targetsOf(m, 'value').map((t) => (t as { key: string }).key));
    const a = keys(before);
    if ([...keys(after)].some((k) => a.has(k))) return false;
    if (before?.kind === 'number' && after.kind === 'number') return false;
    if (before?.kind === 'quoted' && after.kind === 'quoted') return false;
    return true;
  }

  private clause(): Condition {
    const start = this.pos;
    let i = this.pos;
    // a clause runs to the next boundary word that starts a new clause
    while (i < this.ms.length) {
      const m = this.ms[i]!;
      if (m.kind === 'symbol' && (m.text === '(' || m.text === ')')) break;
      if (i > start && m.kind === 'symbol' && m.text === ',' && this.boundary(i)) break;
      if (i > start && m.kind === 'role' && BOUNDARY_ROLES.has(m.role) && this.boundary(i)) {
        // "between 2 and 4 times": the "and" belongs to the numbers
        if (
          m.role === 'and' &&
          this.ms.slice(start, i).some((x) => isRole(x, 'between')) &&
          this.ms[i + 1]?.kind === 'number'
        ) {
          i++;
          continue;
        }
        // "with" right after a subject or "who" does not end the clause: "users with a phone"
        break;
      }
      if (i > start && startsAction(m) && doneAction(this.ms.slice(start, i))) break;
      i++;
    }
    const run = this.ms.slice(start, i);
    this.pos = i;
    if (run.length === 0) {
      const m = this.peek();
      throw new NotUnderstood(
        m ? `Nothing to test before "${m.raw}".` : 'The criteria end too early.',
        m ? [m.raw] : [],
      );
    }
    // A clause of only subject words ("users", "who") joins the next one.
    if (run.every((m) => isSubject(m)) && this.pos < this.ms.length && !this.isSymbol(')')) {
      if (isRole(this.peek(), 'and', 'but', 'or') || this.isSymbol(',')) return { type: 'all' };
      for (const m of run) m.used = true;
      return this.clause();
    }
    const c = clauseCondition(run, {
      lexicon: this.lexicon,
      previousEvents: this.previousEvents,
      previous: this.previous,
    });
    const did = findDid(c);
    if (did) this.previousEvents = did;
    this.previous = c.type === 'not' ? c.of : c;
    return c;
  }
}

/** Words that name what a user did: an event, signing up, being active. */
const startsAction = (m: Tagged) =>
  (m.kind === 'target' && targetsOf(m).some((t) => t.kind === 'event')) ||
  isRole(m, 'first_seen', 'active', 'inactive', 'returning');

/**
 * A run that already holds an action and its period: the next action starts a clause of its own
 * ("signed up in May made a purchase in June", "signed up in May are still active this week").
 */
const doneAction = (run: Tagged[]) => run.some((m) => m.kind === 'period') && run.some(startsAction);

function findDid(c: Condition): string[] | undefined {
  if (c.type === 'did' && c.events.length > 0) return c.events;
  if (c.type === 'not' || c.type === 'and') return findDid(c.type === 'not' ? c.of : c.of[0]!);
  return undefined;
}
