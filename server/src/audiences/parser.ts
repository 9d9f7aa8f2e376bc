// The built-in criteria parser: a recursive-descent parser over the controlled language of
// docs/segments.md ("users who did purchase at least 3 times in the last 30 days and whose plan
// is premium"), producing a segment definition. Deterministic: the same words and the same event
// names known to the app always give the same definition.
import {
  type Condition,
  type PropertyOp,
  type PropertyValue,
  type Range,
  type SegmentDefinition,
  USER_COLUMNS,
} from './ast.js';
import { CriteriaError } from './cursor.js';
import { TimePhrases } from './time-phrases.js';
import { type Token, TokenizeError, tokenize } from './tokenizer.js';
import {
  AUX,
  EVENT_VERBS,
  GREATER,
  IMPLY_EVENT,
  LEADS,
  LESS,
  NEGATIONS,
  OPERATOR_WORDS,
  RELATIVES,
  RESERVED,
  SET_WORDS,
  SUBJECTS,
  UNSET_WORDS,
  VALUE_STOPS,
} from './vocabulary.js';

export { CriteriaError };

export interface ParseOptions {
  /** Event names the app has tracked; used to match names regardless of case, and verbs like "purchased". */
  knownEvents?: readonly string[];
}

const not = (c: Condition): Condition => (c.type === 'not' ? c.of : { type: 'not', of: c });

class Parser extends TimePhrases {
  private readonly known: Map<string, string>;
  private readonly exact: Set<string>;

  constructor(tokens: Token[], source: string, options: ParseOptions) {
    super(tokens, source);
    this.exact = new Set(options.knownEvents ?? []);
    this.known = new Map([...this.exact].reverse().map((n) => [n.toLowerCase(), n]));
  }

  parse(): SegmentDefinition {
    let subject = false;
    while (this.isIn(LEADS) || this.isIn(SUBJECTS)) {
      if (this.isIn(SUBJECTS)) subject = true;
      this.pos++;
    }
    if (this.peek().kind === 'end') {
      if (subject) return { version: 1, where: { type: 'all' } };
      this.fail('The criteria are empty.');
    }
    const where = this.or();
    if (this.peek().kind !== 'end')
      this.fail(`I understood the criteria up to "${this.peek().text}" but not from there.`);
    return { version: 1, where };
  }

  private or(): Condition {
    const parts = [this.and()];
    while (this.accept('or')) parts.push(this.and());
    return parts.length === 1 ? parts[0]! : { type: 'or', of: parts };
  }

  private and(): Condition {
    const parts = [this.unary()];
    for (;;) {
      if (this.peek().kind === ',') {
        this.pos++;
        if (!this.accept('and')) this.accept('but');
      } else if (!this.accept('and') && !this.accept('but')) break;
      parts.push(this.unary());
    }
    return parts.length === 1 ? parts[0]! : { type: 'and', of: parts };
  }

  private unary(): Condition {
    while (this.isIn(SUBJECTS) || this.isIn(RELATIVES)) this.pos++;
    if (this.is('not') && this.peek(1).kind === '(') {
      this.pos++;
      return not(this.group());
    }
    if (this.peek().kind === '(') return this.group();
    return this.clause();
  }

  private depth = 0;

  private group(): Condition {
    if (++this.depth > 20) this.fail('Parentheses are nested more than 20 deep.');
    this.pos++; // (
    const inner = this.or();
    this.depth--;
    if (this.peek().kind !== ')') this.fail('A parenthesis is not closed.');
    this.pos++;
    return inner;
  }

  private clause(): Condition {
    while (this.isIn(SUBJECTS) || this.isIn(RELATIVES)) this.pos++;
    if (this.accept('all') || this.accept('everyone') || this.accept('everybody') || this.accept('anyone')) {
      this.accept('users');
      return { type: 'all' };
    }
    if (this.accept('whose') || this.accept('where')) return this.property();
    if (this.is('with') || this.is('without')) {
      const without = this.next().lower === 'without';
      const c = this.hasField() ?? this.property(without ? 'without' : 'with');
      return without && c.type !== 'property' ? not(c) : c;
    }
    let negated = false;
    let impliesEvent = false;
    for (;;) {
      if (this.isIn(new Set(['have', 'has', 'had']))) {
        const save = this.pos;
        this.pos++;
        const has = this.hasField();
        if (has) return negated ? not(has) : has;
        this.pos = save;
      }
      if (this.isIn(new Set(['did', 'do', 'does'])) && this.isIn(NEGATIONS, 1)) {
        this.pos++;
        impliesEvent = true;
        continue;
      }
      if (this.isIn(AUX)) {
        this.pos++;
        continue;
      }
      if (this.isIn(NEGATIONS)) {
        if (IMPLY_EVENT.has(this.peek().lower)) impliesEvent = true;
        negated = !negated;
        this.pos++;
        continue;
      }
      break;
    }
    const head = this.peek();
    const wrap = (c: Condition) => (negated ? not(c) : c);
    if (this.isIn(EVENT_VERBS)) {
      this.pos++;
      return wrap(this.event(false));
    }
    if (this.is('active') || this.is('seen')) return this.active(negated);
    if (this.is('inactive') || this.is('dormant')) {
      this.pos++;
      return wrap(this.inactive());
    }
    if (this.accept('signed', 'up') || this.accept('signed-up') || this.accept('registered') || this.accept('joined')) {
      return wrap(this.signedUp());
    }
    if (this.accept('first', 'seen') || this.accept('created')) return wrap(this.signedUp());
    if (impliesEvent && (head.kind === 'string' || (head.kind === 'word' && !RESERVED.has(head.lower)))) {
      return wrap(this.event(true));
    }
    if (head.kind === 'word' && !RESERVED.has(head.lower) && this.verbEvent(head.lower)) return wrap(this.event(true));
    if ((head.kind === 'word' || head.kind === 'string') && this.isOperator(1) && !negated) return this.property();
    if (head.kind === 'end') this.fail('The criteria end where a condition was expected.');
    this.fail(`"${head.text}" is not a condition I know.`);
  }

  /** "has an email", "with a phone number", "has no email", "has property plan"; null when not that. */
  private hasField(): Condition | null {
    const save = this.pos;
    let negated = false;
    if (this.accept('no')) negated = true;
    while (this.accept('a') || this.accept('an') || this.accept('any') || this.accept('valid')) {}
    const field = this.peek().lower;
    if (this.peek().kind === 'word' && (field === 'email' || field === 'e-mail' || field === 'phone')) {
      // "with email contains x" is a comparison, not "has an email".
      if (this.isOperator(1)) {
        this.pos = save;
        return null;
      }
      this.pos++;
      if (field === 'phone') this.accept('number');
      else this.accept('address');
      const c: Condition = { type: 'has', field: field === 'phone' ? 'phone' : 'email' };
      return negated ? not(c) : c;
    }
    if (this.accept('property')) {
      const key = this.key();
      return { type: 'property', key, op: negated ? 'not_exists' : 'exists' };
    }
    this.pos = save;
    return null;
  }

  /** The name after "did": quoted, or one word; matched to a tracked event regardless of case. */
  private event(stem: boolean): Condition {
    this.accept('the');
    if (
      this.is('event') &&
      (this.peek(1).kind === 'string' || (this.peek(1).kind === 'word' && !RESERVED.has(this.peek(1).lower)))
    ) {
      this.pos++;
    }
    const t = this.peek();
    if (t.kind !== 'string' && (t.kind !== 'word' || RESERVED.has(t.lower))) {
      this.fail('Name the event, for example "did purchase"; quote names that contain spaces.');
    }
    this.pos++;
    // A name the app tracks in exactly this spelling wins; else the tracked name that differs only in case.
    const event = this.exact.has(t.text)
      ? t.text
      : ((stem && t.kind === 'word' ? this.verbEvent(t.lower) : this.known.get(t.lower)) ?? t.text);
    let min = 1;
    let max: number | null = null;
    let range: Range | undefined;
    let counted = false;
    for (let i = 0; i < 2; i++) {
      if (!counted) {
        const c = this.times();
        if (c) {
          [min, max] = c;
          counted = true;
          continue;
        }
      }
      if (!range) {
        const r = this.range();
        if (r) {
          range = r;
          continue;
        }
      }
      break;
    }
    return range ? { type: 'event', event, min, max, range } : { type: 'event', event, min, max };
  }

  /** A tracked event name for a word: exact, any case, or a verb form ("purchased" -> "purchase"). */
  private verbEvent(word: string): string | null {
    const exact = this.known.get(word);
    if (exact) return exact;
    for (const suffix of ['ed', 'd', 'es', 's']) {
      if (word.endsWith(suffix) && word.length > suffix.length + 2) {
        const hit = this.known.get(word.slice(0, -suffix.length));
        if (hit) return hit;
      }
    }
    return null;
  }

  private active(negated: boolean): Condition {
    this.pos++; // active | seen
    if (negated && (this.accept('for') || this.isNumber())) {
      const n = this.count('of the inactive period');
      return { type: 'inactive', since: { ago: Math.max(n, 1), unit: this.unit() } };
    }
    if (negated && this.accept('since')) return { type: 'inactive', since: this.date('after "since"') };
    const range = this.range();
    if (!range) this.fail('Say over which period, for example "active in the last 7 days".');
    const c: Condition = { type: 'active', range };
    return negated ? not(c) : c;
  }

  private inactive(): Condition {
    if (this.accept('since')) return { type: 'inactive', since: this.date('after "since"') };
    const save = this.pos;
    this.accept('for');
    if (this.isNumber()) {
      const n = this.count('');
      return { type: 'inactive', since: { ago: Math.max(n, 1), unit: this.unit() } };
    }
    this.pos = save;
    const range = this.range();
    if (range?.from && 'ago' in range.from && !range.to) return { type: 'inactive', since: range.from };
    this.fail('Say for how long, for example "inactive for 14 days".');
  }

  private signedUp(): Condition {
    if (this.peek().kind === '(' && this.is('first', 1) && this.is('seen', 2) && this.peek(3).kind === ')')
      this.pos += 4;
    const range = this.range();
    if (!range) this.fail('Say when, for example "signed up in the last 7 days" or "signed up this week".');
    return { type: 'signed_up', range };
  }

  private isOperator(k: number): boolean {
    const t = this.peek(k);
    return t.kind === 'symbol' || (t.kind === 'word' && OPERATOR_WORDS.has(t.lower));
  }

  private key(): string {
    while (this.accept('the') || this.accept('a') || this.accept('an')) {}
    this.accept('property');
    const t = this.peek();
    if (t.kind !== 'string' && (t.kind !== 'word' || RESERVED.has(t.lower))) {
      this.fail('Name the property, for example "whose plan is premium"; quote names that contain spaces.');
    }
    this.pos++;
    this.accept('property');
    return t.kind === 'word' ? t.text.replace(/^properties\./i, '') : t.text;
  }

  private value(): PropertyValue {
    const t = this.peek();
    if (t.kind === 'string' || t.kind === 'date') {
      this.pos++;
      return t.text;
    }
    if (t.kind === 'number') {
      this.pos++;
      return Number(t.text);
    }
    if (t.kind !== 'word' || VALUE_STOPS.has(t.lower)) this.fail('Expected a value to compare with.');
    if (t.lower === 'true' || t.lower === 'false') {
      this.pos++;
      return t.lower === 'true';
    }
    const words: string[] = [];
    while ((this.peek().kind === 'word' || this.peek().kind === 'number') && !VALUE_STOPS.has(this.peek().lower)) {
      words.push(this.next().text);
    }
    return words.join(' ');
  }

  private list(): PropertyValue[] {
    const values = [this.value()];
    for (;;) {
      if (this.peek().kind === ',') {
        this.pos++;
        this.accept('or');
      } else if (!this.accept('or')) break;
      values.push(this.value());
    }
    return values;
  }

  private numberValue(key: string, op: PropertyOp): Condition {
    if (USER_COLUMNS[key.toLowerCase()]) {
      this.fail(`${key} is text: compare it with "is", "contains", "starts with" or "ends with".`);
    }
    const n = this.number(`to compare ${key} with`);
    return { type: 'property', key, op, value: n };
  }

  /** "<key> is premium", "<key> > 3", "<key> contains x", "<key> exists", ... */
  private property(lead: 'with' | 'without' | 'whose' = 'whose'): Condition {
    const key = this.key();
    const t0 = this.peek();
    const ends =
      t0.kind === 'end' || t0.kind === ')' || t0.kind === ',' || (t0.kind === 'word' && VALUE_STOPS.has(t0.lower));
    if (lead === 'without') return { type: 'property', key, op: 'not_exists' };
    if (lead === 'with' && ends) return { type: 'property', key, op: 'exists' };
    const p = (op: PropertyOp, value?: PropertyValue | PropertyValue[]): Condition =>
      value === undefined ? { type: 'property', key, op } : { type: 'property', key, op, value };
    const t = this.peek();
    if (t.kind === 'symbol') {
      this.pos++;
      const op = ({ '=': 'eq', '!=': 'neq', '>': 'gt', '>=': 'gte', '<': 'lt', '<=': 'lte' } as const)[
        t.text as '=' | '!=' | '>' | '>=' | '<' | '<='
      ];
      return op === 'eq' || op === 'neq' ? p(op, this.value()) : this.numberValue(key, op);
    }
    if (this.accept('equals') || this.accept('is', 'equal', 'to')) return p('eq', this.value());
    if (this.accept('contains') || this.accept('includes') || this.accept('contain') || this.accept('include')) {
      return p('contains', this.value());
    }
    if (this.accept('does', 'not', 'contain') || this.accept("doesn't", 'contain'))
      return p('not_contains', this.value());
    if (this.accept('does', 'not', 'include') || this.accept("doesn't", 'include'))
      return p('not_contains', this.value());
    if (this.accept('does', 'not', 'exist') || this.accept("doesn't", 'exist')) return p('not_exists');
    if (this.accept('does', 'not', 'equal') || this.accept("doesn't", 'equal')) return p('neq', this.value());
    if (this.accept('starts', 'with') || this.accept('begins', 'with')) return p('starts_with', this.value());
    if (this.accept('ends', 'with')) return p('ends_with', this.value());
    if (this.accept('exists')) return p('exists');
    const comparison = this.comparison(key);
    if (comparison) return comparison;
    if (this.accept('is') || this.accept('was') || this.accept('are')) {
      const compared = this.comparison(key);
      if (compared) return compared;
      if (this.accept('not') || this.accept("isn't")) {
        if (this.isIn(SET_WORDS)) {
          this.pos++;
          return p('not_exists');
        }
        this.accept('equal', 'to');
        if (this.accept('one', 'of') || this.accept('any', 'of') || this.accept('in')) return not(p('in', this.list()));
        return p('neq', this.value());
      }
      if (this.isIn(SET_WORDS)) {
        this.pos++;
        return p('exists');
      }
      if (this.isIn(UNSET_WORDS)) {
        this.pos++;
        return p('not_exists');
      }
      if (this.accept('one', 'of') || this.accept('any', 'of') || this.accept('in')) return p('in', this.list());
      return p('eq', this.value());
    }
    if (this.accept("isn't")) return p('neq', this.value());
    this.fail(`Expected a comparison after "${key}", such as "is", "is not", "contains", "greater than" or "exists".`);
  }

  private comparison(key: string): Condition | null {
    if (this.isIn(GREATER) && this.is('than', 1)) {
      this.pos += 2;
      return this.numberValue(key, this.accept('or', 'equal', 'to') ? 'gte' : 'gt');
    }
    if (this.isIn(LESS) && this.is('than', 1)) {
      this.pos += 2;
      return this.numberValue(key, this.accept('or', 'equal', 'to') ? 'lte' : 'lt');
    }
    if (this.accept('above') || this.accept('over')) return this.numberValue(key, 'gt');
    if (this.accept('below') || this.accept('under')) return this.numberValue(key, 'lt');
    if (this.accept('at', 'least')) return this.numberValue(key, 'gte');
    if (this.accept('at', 'most')) return this.numberValue(key, 'lte');
    return null;
  }
}

/** Parses criteria into a segment definition, or throws CriteriaError saying where it stopped. */
export function parseCriteria(criteria: string, options: ParseOptions = {}): SegmentDefinition {
  let tokens: Token[];
  try {
    tokens = tokenize(criteria);
  } catch (err) {
    if (err instanceof TokenizeError) throw new CriteriaError(err.message, criteria.slice(err.at).trim());
    throw err;
  }
  const definition = new Parser(tokens, criteria, options).parse();
  if (conditions(definition.where) > MAX_CONDITIONS) {
    throw new CriteriaError(`The criteria combine more than ${MAX_CONDITIONS} conditions; split the audience up.`, '');
  }
  return definition;
}

/** Upper bound on the conditions of one audience (each becomes part of one SQL statement). */
const MAX_CONDITIONS = 100;

function conditions(c: Condition): number {
  if (c.type === 'and' || c.type === 'or') return c.of.reduce((n, x) => n + conditions(x), 0);
  return c.type === 'not' ? conditions(c.of) : 1;
}
