// Passes over an analytics question that shape its answer: the users it is about ("revenue from
// users who ..."), its periods and comparisons of periods, its ordering ("top 5", "which country
// has the most") and its groupings ("by category", "daily").
import type { Bucket, Dimension } from './ast.js';
import { eventsOf, isRole, roleOf, targetsOf } from './clause.js';
import { parseCriteria } from './criteria.js';
import type { Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';
import { mergeAdjacent } from './periods.js';
import { QuestionState } from './question-state.js';
import { readSides } from './versus.js';

export class QuestionShape extends QuestionState {
  protected relativeSegment() {
    const i = this.ms.findIndex((m, k) => isRole(m, 'users', 'visitors') && isRole(this.ms[this.next(k)], 'rel'));
    if (i < 0) return;
    const measured = this.ms
      .slice(0, i)
      .some(
        (m) =>
          (eventsOf(m) && targetsOf(m, 'agent').length === 0) ||
          isRole(m, 'money', 'sales', 'how_much', 'aov', 'aov_median'),
      );
    if (!measured) return;
    const clause = this.ms.slice(i);
    this.relSegment = parseCriteria(
      { tokens: [], mentions: clause.map((m) => ({ ...m, used: false })), corrections: [], today: '' },
      this.lexicon,
    );
    for (const m of clause) m.used = true;
  }

  // ---- periods and comparisons -------------------------------------------------------------

  protected periods() {
    const ps = this.ms.filter((m) => m.kind === 'period' && !m.used);
    for (const p of this.ms.filter((m) => isRole(m, 'all_time'))) p.used = true;
    if (!this.has('vs', 'change', 'wow', 'mom') && this.clausePeriods(ps)) {
      this.periodsInClauses = true;
      return;
    }
    const vs = this.take('vs', 'change', 'wow', 'mom');
    for (const p of ps) p.used = true;
    const periods = ps.map((p) => (p.kind === 'period' ? p.period : null)!);
    if (vs && isRole(vs, 'wow', 'mom') && periods.length === 0) {
      const unit = roleOf(vs) === 'wow' ? 'week' : 'month';
      this.compare = [
        { from: { unit, offset: 0 }, to: { unit: 'day', offset: 1 }, label: `this ${unit}`, unit },
        { from: { unit, offset: -1 }, to: { unit, offset: 0 }, label: `last ${unit}`, unit },
      ];
      return;
    }
    if (periods.length === 1) {
      const p = ps[0]!;
      if (vs && p.kind === 'period' && p.parts) {
        this.compare = p.parts;
        return;
      }
      this.sides = vs && isRole(vs, 'vs') ? (readSides(this.ms, vs) ?? undefined) : undefined;
      if (this.sides) {
        this.period = periods[0];
        return;
      }
      if (vs && !isRole(vs, 'change'))
        throw new NotUnderstood('Compared with what? Name both periods, e.g. "this week vs last week".');
      if (vs) vs.used = false;
      this.period = periods[0];
      return;
    }
    if (periods.length === 0) {
      this.sides = vs && isRole(vs, 'vs') ? (readSides(this.ms, vs) ?? undefined) : undefined;
      if (this.sides) return;
      if (vs && !isRole(vs, 'change'))
        throw new NotUnderstood('Compared with what? Name both periods, e.g. "this week vs last week".');
      if (vs) vs.used = false;
      return;
    }
    if (vs) {
      this.compare = periods;
      this.absorbBetween(ps);
      return;
    }
    // "yesterday or today", "Monday and Tuesday": adjacent periods make one
    const merged = mergeAdjacent(periods);
    if (merged) {
      this.period = merged;
      this.absorbBetween(ps);
      return;
    }
    throw new NotUnderstood(
      `Two periods ("${ps.map((p) => p.raw).join('", "')}"): compare them with "vs", or ask about one.`,
    );
  }

  /**
   * Two periods or more in a question about users, each with its own action ("bought in May and
   * again in June", "active both this week and last week"): the periods belong to clauses about the
   * users, not to the question. Periods joined by a connector only ("yesterday or today") are one.
   */
  protected clausePeriods(ps: Tagged[]): boolean {
    if (ps.length < 2) return false;
    const people = this.ms.some(
      (m) => !m.used && (isRole(m, 'users', 'visitors', 'returning') || targetsOf(m, 'agent').length > 0),
    );
    if (!people) return false;
    const a = this.ms.indexOf(ps[0]!);
    const b = this.ms.indexOf(ps[ps.length - 1]!);
    const inside = this.ms
      .slice(a + 1, b)
      .filter((m) => m.kind !== 'period' && m.kind !== 'symbol' && !isRole(m, 'and', 'or', 'to'));
    const both = this.ms.slice(0, a).some((m) => m.kind === 'word' && m.word === 'both');
    return inside.length > 0 || both;
  }

  protected absorbBetween(ps: Tagged[]) {
    const a = this.ms.indexOf(ps[0]!);
    const b = this.ms.indexOf(ps[ps.length - 1]!);
    for (let i = a; i <= b; i++) if (isRole(this.ms[i], 'and', 'or', 'to', 'vs', 'change')) this.ms[i]!.used = true;
  }

  // ---- order, top N, grouping, buckets -----------------------------------------------------

  protected dimensionAt(k: number): { dim: Dimension | { bucket: Bucket }; end: number } | null {
    const m = this.ms[k];
    if (!m || m.used) return null;
    const keys = targetsOf(m, 'key');
    if (keys.length === 1) return { dim: { kind: 'event_property', key: (keys[0] as { key: string }).key }, end: k };
    if (isRole(m, 'event_name', 'type_word')) return { dim: { kind: 'event_name' }, end: k };
    if (isRole(m, 'event_word')) {
      const n = this.ms[k + 1];
      if (isRole(n, 'type_word')) return { dim: { kind: 'event_name' }, end: k + 1 };
      return { dim: { kind: 'event_name' }, end: k };
    }
    if (isRole(m, 'users', 'visitors')) return { dim: { kind: 'user' }, end: k };
    if (targetsOf(m, 'field').some((t) => t.kind === 'field' && t.field === 'user_id'))
      return { dim: { kind: 'user' }, end: k };
    if (roleOf(m).startsWith('unit:')) return { dim: { bucket: roleOf(m).slice(5) as Bucket }, end: k };
    return null;
  }

  protected orderAndGroups() {
    for (let i = 0; i < this.ms.length; i++) {
      const m = this.ms[i]!;
      if (m.used) continue;
      const r = roleOf(m);
      if (r === 'top' || r === 'bottom') {
        this.orderTop(i, m, r);
        continue;
      }
      if (
        [
          'most',
          'least',
          'best_selling',
          'worst_selling',
          'busiest',
          'quietest',
          'most_active',
          'least_active',
        ].includes(r)
      ) {
        this.orderExtreme(i, m, r);
        continue;
      }
      if (r === 'which' || r === 'rank') {
        this.whichDimension(i, m, r);
        continue;
      }
      if (r === 'by' || r === 'per' || r === 'group' || r === 'each' || r === 'breakdown') {
        this.groupAt(i, m, r);
        continue;
      }
      if (r.startsWith('bucket:')) {
        m.used = true;
        this.bucket = r.slice(7) as Bucket | 'auto';
      }
    }
    if (this.order?.dimension === 'pending' && !this.groupBy) {
      throw new NotUnderstood('Top what? Say what to rank, e.g. "top 5 countries by revenue".');
    }
  }

  /** "top 5 countries", "bottom 3 categories" */
  protected orderTop(i: number, m: Tagged, r: string) {
    let k = this.next(i);
    let limit: number | undefined;
    const n = this.ms[k];
    if (n?.kind === 'number' && !n.money && Number.isInteger(n.value) && n.value > 0) {
      limit = n.value;
      n.used = true;
      k = this.next(k);
    }
    const d = this.dimensionAt(k);
    m.used = true;
    this.order = { order: r === 'top' ? 'desc' : 'asc', limit: limit ?? 10 };
    if (d) {
      this.setDimension(d.dim);
      for (let x = k; x <= d.end; x++) this.ms[x]!.used = true;
    } else {
      this.order.dimension = 'pending';
    }
    return;
  }

  /** "most viewed category", "best-selling products", "most active users" */
  protected orderExtreme(i: number, m: Tagged, r: string) {
    m.used = true;
    // "the 3 least viewed categories", "the 5 most active users": a number of rows written before
    const n = this.ms[i - 1];
    const written = n?.kind === 'number' && !n.used && !n.money && Number.isInteger(n.value) && n.value > 0;
    if (written) n.used = true;
    const order = ['least', 'worst_selling', 'quietest', 'least_active'].includes(r) ? 'asc' : 'desc';
    const limit = written ? n.value : (this.order?.limit ?? 1);
    this.order = { order, limit, ...(r.endsWith('selling') ? { selling: true } : {}) };
    if (r === 'most_active' || r === 'least_active') {
      // "most active users": users by number of events
      const k = this.next(i);
      const d = this.dimensionAt(k);
      if (d) {
        this.setDimension(d.dim);
        this.ms[k]!.used = true;
      }
      if (!written) this.order.limit = 10;
      return;
    }
    // "most viewed category": the event that orders, then the dimension
    let k = this.next(i);
    const ev = eventsOf(this.ms[k]);
    if (ev && this.dimensionAt(this.next(k))) {
      this.order.events = ev;
      this.ms[k]!.used = true;
      k = this.next(k);
    }
    const d = this.dimensionAt(k);
    if (d) {
      this.setDimension(d.dim);
      // "best-selling products": a list; "best-selling product": the one
      if (/s$/i.test(this.ms[d.end]!.raw) && !/ss$/i.test(this.ms[d.end]!.raw) && this.order.limit === 1 && !written)
        this.order.limit = 10;
      for (let x = k; x <= d.end; x++) this.ms[x]!.used = true;
    } else this.order.dimension = 'pending';
    return;
  }

  /** "which country ...", "which day ..." */
  protected whichDimension(i: number, m: Tagged, r: string) {
    // "which country ...", "which day ...", "which 2 categories ... the fewest"
    let k = this.next(i);
    const n = this.ms[k];
    const count = n?.kind === 'number' && !n.money && !n.percent && Number.isInteger(n.value) && n.value > 0;
    if (count) k = this.next(k);
    const d = this.dimensionAt(k);
    const ranked = this.ms.some((x) => !x.used && isRole(x, 'most', 'least', 'top', 'bottom'));
    if (count && !(d && ranked)) return;
    if (d && (!('kind' in d.dim && d.dim.kind === 'user') || ranked)) {
      m.used = true;
      // the number of rows, for the ranking word that follows ("the fewest")
      if (count) {
        n.used = true;
        this.order = { order: 'desc', limit: n.value };
      }
      this.setDimension('bucket' in d.dim ? { kind: 'time', unit: d.dim.bucket } : d.dim);
      for (let x = k; x <= d.end; x++) this.ms[x]!.used = true;
      if (r === 'rank' && !this.order) this.order = { order: 'desc' };
    }
    return;
  }

  /** "by country", "per day", "for each category", "breakdown of ... by ..." */
  protected groupAt(i: number, m: Tagged, r: string) {
    const k = this.next(i);
    const d = this.dimensionAt(k);
    if (!d) {
      if (r === 'breakdown' || r === 'group') {
        // "breakdown of purchases by country": the dimension comes later
        m.used = true;
      }
      return;
    }
    // "purchases by premium users vs free users": "by" names the segments compared
    if (this.sides && 'kind' in d.dim && d.dim.kind === 'user') {
      m.used = true;
      this.ms[k]!.used = true;
      return;
    }
    // "per user" after a count is a ratio, unless totals per user are asked
    if (r === 'per' && 'kind' in d.dim && d.dim.kind === 'user' && !this.ms.some((x) => isRole(x, 'agg:sum'))) return;
    m.used = true;
    for (let x = k; x <= d.end; x++) this.ms[x]!.used = true;
    if ('bucket' in d.dim && (r === 'by' || r === 'group' || r === 'breakdown')) this.seriesAsked = true;
    this.setDimension(d.dim);
    return;
  }

  protected setDimension(d: Dimension | { bucket: Bucket }) {
    if ('bucket' in d) {
      if (this.order && !this.groupBy) {
        this.groupBy = { kind: 'time', unit: d.bucket };
        return;
      }
      if (this.bucket && this.bucket !== d.bucket) throw new NotUnderstood('Two different time buckets.');
      this.bucket = d.bucket;
      return;
    }
    if (this.groupBy && JSON.stringify(this.groupBy) !== JSON.stringify(d)) {
      throw new NotUnderstood('Tally breaks a figure down by one dimension at a time (plus time).');
    }
    this.groupBy = d;
  }
}
