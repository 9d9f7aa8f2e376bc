// Time phrases of the criteria language: how many times ("at least 3 times") and when ("in the
// last 30 days", "this week", "since 2026-01-01", "between 2026-01-01 and 2026-01-31").
import type { Instant, Range, Unit } from './ast.js';
import { Cursor } from './cursor.js';
import { PERIODS, UNITS } from './vocabulary.js';

export class TimePhrases extends Cursor {
  /** "at least 3 times", "exactly 2 times", "more than 5 times", ...: [min, max]. */
  protected times(): [number, number | null] | null {
    const unit = () => this.accept('times') || this.accept('time') || this.accept('x');
    if (this.accept('at', 'least')) {
      if (this.accept('once')) return [1, null];
      if (this.accept('twice')) return [2, null];
      const n = this.count('after "at least"');
      unit();
      return [Math.max(n, 0), null];
    }
    if (this.accept('at', 'most')) {
      const n = this.count('after "at most"');
      if (n < 1) this.fail('"at most 0 times" means never: write "did not" instead.');
      unit();
      return [1, n];
    }
    if (this.accept('exactly')) {
      if (this.accept('once')) return [1, 1];
      if (this.accept('twice')) return [2, 2];
      const n = this.count('after "exactly"');
      unit();
      return [n, n];
    }
    if (this.accept('more', 'than')) {
      const n = this.count('after "more than"');
      unit();
      return [n + 1, null];
    }
    if (this.accept('fewer', 'than') || this.accept('less', 'than')) {
      const n = this.count('after "fewer than"');
      if (n < 2) this.fail('"fewer than 1 time" means never: write "did not" instead.');
      unit();
      return [1, n - 1];
    }
    if (this.is('between') && this.isNumber(1)) {
      this.pos++;
      const a = this.count('after "between"');
      if (!this.accept('and')) this.fail('Expected "and" in "between N and M times".');
      const b = this.count('after "and"');
      unit();
      return [Math.max(Math.min(a, b), 1), Math.max(a, b)];
    }
    if (this.accept('once')) return [1, 1];
    if (this.accept('twice')) return [2, 2];
    if (this.isNumber() && (this.is('times', 1) || this.is('time', 1) || this.is('x', 1) || this.is('or', 1))) {
      const n = this.count('');
      if (this.accept('or', 'more')) {
        unit();
        return [Math.max(n, 1), null];
      }
      if (this.accept('or', 'fewer') || this.accept('or', 'less')) {
        unit();
        return [1, Math.max(n, 1)];
      }
      if (!unit()) this.pos--;
      else return [n, n];
    }
    return null;
  }

  protected unit(): Unit {
    const t = this.peek();
    const unit = t.kind === 'word' ? UNITS[t.lower] : undefined;
    if (!unit) this.fail('Expected a unit of time: hours, days, weeks, months or years.');
    this.pos++;
    return unit;
  }

  protected date(what: string): Instant {
    const t = this.peek();
    if (t.kind !== 'date') this.fail(`Expected a date (YYYY-MM-DD) ${what}.`);
    this.pos++;
    if (t.text.length > 10) {
      if (Number.isNaN(Date.parse(t.text))) this.fail(`"${t.text}" is not a valid date.`);
      return { at: t.text };
    }
    const day = new Date(`${t.text}T00:00:00Z`);
    if (Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== t.text)
      this.fail(`"${t.text}" is not a valid date.`);
    return { date: t.text };
  }

  protected endOfDay(i: Instant): Instant {
    return 'date' in i ? { date: i.date, shift: 1 } : i;
  }

  /** A time range, or null when none follows. */
  protected range(): Range | null {
    const start = this.pos;
    if (this.accept('today')) return { from: { start: 'day', back: 0 } };
    if (this.accept('yesterday')) return { from: { start: 'day', back: 1 }, to: { start: 'day', back: 0 } };
    if (this.is('in') || this.is('within') || this.is('during') || this.is('over') || this.is('for')) this.pos++;
    const rolling = (): Range => {
      const n = this.isNumber() ? this.count('') : 1;
      if (n < 1) this.fail('The period must be at least 1.');
      return { from: { ago: n, unit: this.unit() } };
    };
    if (this.accept('the')) {
      if (!this.accept('last') && !this.accept('past') && !this.accept('previous')) {
        this.fail('Expected a period such as "the last 30 days".');
      }
      return rolling();
    }
    if (this.accept('past')) return rolling();
    if (this.accept('last') || this.accept('previous')) {
      if (this.isNumber()) return rolling();
      // "last week": the previous calendar period
      const t = this.peek();
      if (t.kind !== 'word' || !PERIODS.has(t.lower))
        this.fail('Expected a period such as "last 7 days" or "last week".');
      this.pos++;
      const p = t.lower as 'day' | 'week' | 'month' | 'year';
      return { from: { start: p, back: 1 }, to: { start: p, back: 0 } };
    }
    if (this.isNumber() && this.peek(-1).lower === 'within') return rolling();
    if (this.accept('this')) {
      const t = this.peek();
      if (t.kind !== 'word' || !PERIODS.has(t.lower)) this.fail('Expected "this week", "this month" or "this year".');
      this.pos++;
      return { from: { start: t.lower as 'day' | 'week' | 'month' | 'year', back: 0 } };
    }
    if (this.accept('since')) return { from: this.date('after "since"') };
    if (this.accept('after')) return { from: this.endOfDay(this.date('after "after"')) };
    if (this.accept('before')) return { to: this.date('after "before"') };
    if (this.accept('on')) {
      const d = this.date('after "on"');
      return { from: d, to: this.endOfDay(d) };
    }
    if (this.accept('between') || this.accept('from')) {
      const a = this.date('to start the range');
      if (!this.accept('and') && !this.accept('to') && !this.accept('until') && !this.accept('through')) {
        this.fail('Expected "and" between the two dates.');
      }
      const b = this.date('to end the range');
      return { from: a, to: this.endOfDay(b) };
    }
    this.pos = start;
    return null;
  }
}
