// The natural-language engine on seed-demo data (seed 1) with a fixed clock: every case of
// bench/nl-cases.json must give the rows its hand-written reference SQL gives (or be refused when
// marked so), and those rows must still be the recorded `expected` ones. The held-out quarter of
// the cases, never tuned to, is checked apart: no server error, and at least 85% right. Also:
// metric words give the numbers of GET /v1/analytics/metrics, refusals name what was not
// understood with suggestions that work, and seeding is deterministic and idempotent.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoApp, normalise, startDemoApp } from '../helpers/demo-app.js';

interface Case {
  question: string;
  reference_sql?: string;
  expected?: Record<string, unknown>[];
  refused?: boolean;
  held_out?: boolean;
}
const file = path.resolve(import.meta.dirname, '../../bench/nl-cases.json');
const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as {
  seed: { seed: number; users: number; days: number; end_date: string };
  clock: string;
  cases: Case[];
};
const tuned = doc.cases.filter((c) => !c.held_out);
const heldOut = doc.cases.filter((c) => c.held_out);

let demo: DemoApp;
beforeAll(async () => {
  demo = await startDemoApp(doc);
}, 120_000);
afterAll(() => demo?.close());

const ask = (query: string) => demo.client.analyticsQuery({ body: { app_id: demo.appId, query } });

describe('seed-demo', () => {
  it('is deterministic and idempotent: the same options store nothing new', async () => {
    const before = await demo.reference('select count(*) as n from events where app_id = :app');
    const again = await demo.admin.adminDemoSeed({ path: { app_id: demo.appId }, body: doc.seed });
    expect(again.data).toMatchObject({ success: true, events: 0 });
    expect(await demo.reference('select count(*) as n from events where app_id = :app')).toEqual(before);
    const shape = await demo.reference(
      `select count(distinct user_id) as users, count(*) filter (where event_name = 'purchase') as purchases,
         count(*) filter (where event_name = 'purchase' and properties ? 'revenue' and properties ? 'country') as priced
       from events where app_id = :app`,
    );
    expect(shape[0]).toMatchObject({ users: doc.seed.users });
    expect(shape[0]!.priced).toBe(shape[0]!.purchases);
  });
});

describe('bench/nl-cases.json', () => {
  it('has at least 150 cases, 30 of them to refuse, and a held-out quarter', () => {
    expect(doc.cases.length).toBeGreaterThanOrEqual(150);
    expect(doc.cases.filter((c) => c.refused).length).toBeGreaterThanOrEqual(30);
    expect(heldOut.length).toBeGreaterThanOrEqual(doc.cases.length / 5);
  });

  it('reference SQL still gives the recorded results', async () => {
    const update = process.env.UPDATE_NL_CASES === '1';
    for (const c of doc.cases.filter((x) => x.reference_sql)) {
      const rows = await demo.reference(c.reference_sql!);
      if (update) c.expected = rows;
      else expect(rows, c.question).toEqual(c.expected);
    }
    if (update) fs.writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  });

  it.each(tuned.map((c) => [c.question, c] as const))('"%s"', async (_q, c) => {
    const { data, error, response } = await ask(c.question);
    if (c.refused) {
      expect(response.status, JSON.stringify(data)).toBe(400);
      expect(error).toMatchObject({ code: 'QUERY_NOT_UNDERSTOOD' });
      return;
    }
    expect(error, JSON.stringify(error)).toBeUndefined();
    expect(data!.query_method).toBe('rules');
    expect(normalise(data!.data), `${c.question}\n${data!.interpretation}\n${data!.sql}`).toEqual(c.expected);
    expect(data!.rows_returned).toBe(c.expected!.length);
    expect(data!.interpretation).toMatch(/\.$/);
  });

  it('held-out cases: no server error, no wrong figure, and at least 85% right', async () => {
    const outcome = { right: 0, refused: 0, wrong: [] as string[] };
    for (const c of heldOut) {
      const { data, response } = await ask(c.question);
      expect(response.status, c.question).toBeLessThan(500);
      if (response.status === 400) {
        if (c.refused) outcome.right++;
        else outcome.refused++;
      } else if (!c.refused && JSON.stringify(normalise(data!.data)) === JSON.stringify(c.expected)) outcome.right++;
      else outcome.wrong.push(c.question);
    }
    console.info(
      `held-out analytics cases: ${outcome.right}/${heldOut.length} right, ${outcome.refused} refused, ${outcome.wrong.length} wrong`,
    );
    expect(outcome.right / heldOut.length).toBeGreaterThanOrEqual(0.85);
    expect(outcome.wrong).toEqual([]);
  });
});

describe('metric words give the numbers of GET /v1/analytics/metrics', () => {
  const cases: [
    string,
    {
      metric: 'dau' | 'mau' | 'retention' | 'revenue' | 'arpu' | 'conversion' | 'churn';
      start_date: string;
      end_date: string;
      granularity: 'hour' | 'day' | 'week' | 'month';
    },
    'series' | 'single',
  ][] = [
    [
      'DAU by day last week',
      { metric: 'dau', start_date: '2026-03-23', end_date: '2026-03-29', granularity: 'day' },
      'series',
    ],
    [
      'DAU last week',
      { metric: 'dau', start_date: '2026-03-23', end_date: '2026-03-29', granularity: 'week' },
      'single',
    ],
    [
      'hourly DAU yesterday',
      { metric: 'dau', start_date: '2026-03-30', end_date: '2026-03-30', granularity: 'hour' },
      'series',
    ],
    [
      'daily active users by week in march',
      { metric: 'dau', start_date: '2026-03-01', end_date: '2026-03-31', granularity: 'week' },
      'series',
    ],
    [
      'MAU by day in the last 14 days',
      { metric: 'mau', start_date: '2026-03-18', end_date: '2026-03-31', granularity: 'day' },
      'series',
    ],
    [
      'MAU last month',
      { metric: 'mau', start_date: '2026-02-01', end_date: '2026-02-28', granularity: 'month' },
      'single',
    ],
    [
      'weekly retention in february',
      { metric: 'retention', start_date: '2026-02-01', end_date: '2026-02-28', granularity: 'week' },
      'series',
    ],
    [
      'retention last week',
      { metric: 'retention', start_date: '2026-03-23', end_date: '2026-03-29', granularity: 'week' },
      'single',
    ],
    [
      'daily retention last week',
      { metric: 'retention', start_date: '2026-03-23', end_date: '2026-03-29', granularity: 'day' },
      'series',
    ],
    [
      'revenue by day last week',
      { metric: 'revenue', start_date: '2026-03-23', end_date: '2026-03-29', granularity: 'day' },
      'series',
    ],
    [
      'monthly revenue this year',
      { metric: 'revenue', start_date: '2026-01-01', end_date: '2026-03-31', granularity: 'month' },
      'series',
    ],
    [
      'revenue last month',
      { metric: 'revenue', start_date: '2026-02-01', end_date: '2026-02-28', granularity: 'month' },
      'single',
    ],
    [
      'ARPU by week last month',
      { metric: 'arpu', start_date: '2026-02-01', end_date: '2026-02-28', granularity: 'week' },
      'series',
    ],
    [
      'average revenue per user last month',
      { metric: 'arpu', start_date: '2026-02-01', end_date: '2026-02-28', granularity: 'month' },
      'single',
    ],
    [
      'conversion rate by day last week',
      { metric: 'conversion', start_date: '2026-03-23', end_date: '2026-03-29', granularity: 'day' },
      'series',
    ],
    [
      'conversion rate this month',
      { metric: 'conversion', start_date: '2026-03-01', end_date: '2026-03-31', granularity: 'month' },
      'single',
    ],
    [
      'churn by week in march',
      { metric: 'churn', start_date: '2026-03-01', end_date: '2026-03-31', granularity: 'week' },
      'series',
    ],
    [
      'churn rate last week',
      { metric: 'churn', start_date: '2026-03-23', end_date: '2026-03-29', granularity: 'week' },
      'single',
    ],
  ];
  it.each(cases)('"%s"', async (question, params, shape) => {
    const metrics = await demo.client.analyticsMetrics({ query: { app_id: demo.appId, ...params } });
    expect(metrics.error).toBeUndefined();
    const points = metrics.data!.data;
    const { data, error } = await ask(question);
    expect(error, JSON.stringify(error)).toBeUndefined();
    if (shape === 'single') {
      expect(points).toHaveLength(1);
      expect(normalise(data!.data), data!.sql).toEqual([{ value: points[0]!.value }]);
    } else {
      expect(normalise(data!.data), data!.sql).toEqual(points.map((p) => ({ date: p.date, value: p.value })));
    }
    // not a trivially empty comparison
    expect(points.some((p) => p.value !== 0)).toBe(true);
  });
});

describe('answers', () => {
  it('say what was computed and over which period', async () => {
    const { data } = await ask('purchases from FR last week');
    expect(data!.interpretation).toContain('"purchase" events');
    expect(data!.interpretation).toContain('country is "FR"');
    expect(data!.interpretation).toContain('last week (2026-03-23 to 2026-03-29)');
  });

  it('report SQL that runs in the sandbox to the same rows', async () => {
    for (const q of ['purchases by country last week', 'revenue by country', 'how many users purchased yesterday']) {
      const { data, error } = await ask(q);
      expect(error, q).toBeUndefined();
      expect(data!.sql, q).not.toContain('public.');
      const again = await ask(data!.sql!);
      expect(again.error, data!.sql).toBeUndefined();
      expect(again.data!.query_method).toBe('sql');
      expect(again.data!.data, q).toEqual(data!.data);
    }
  });

  it("show the rollup's statement for questions it answers, which callers' SQL may not read", async () => {
    for (const q of ['how many purchases last week', 'top 3 events yesterday']) {
      const { data, error } = await ask(q);
      expect(error, q).toBeUndefined();
      expect(data!.sql, q).toContain('public.event_slots');
      const again = await ask(data!.sql!);
      expect(again.response.status, q).toBe(400);
      expect(again.error, q).toMatchObject({ code: 'QUERY_REJECTED' });
    }
  });

  it('read typos as the closest word of the app and say so', async () => {
    const { data } = await ask('how many purchses yesterday');
    expect(normalise(data!.data)).toEqual([{ value: 10 }]);
    expect(data!.interpretation).toContain('"purchses" as');
  });

  it('take values as parameters: quotes and SQL in a value are data, and refused when never seen', async () => {
    const { error, response } = await ask("purchases where country is 'FR'' or 1=1 --'");
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: 'QUERY_NOT_UNDERSTOOD' });
    const nul = await ask('purchases where country is "F\u0000R"');
    expect(nul.response.status).toBe(400);
  });

  it('refuse very long or odd texts with a 400 that quotes them briefly', async () => {
    const long = await ask('purchases '.repeat(500));
    expect(long.response.status).toBe(400);
    expect(long.error).toMatchObject({ code: 'QUERY_NOT_UNDERSTOOD' });
    const value = await ask(`purchases where country is "${'A'.repeat(3000)}"`);
    expect(value.response.status).toBe(400);
    expect(value.error!.message.length).toBeLessThan(600);
    for (const q of ['💥💥💥', '(((((((', '$$$ %%%', 'revenue > 1e308']) {
      const r = await ask(q);
      expect(r.response.status, q).toBe(400);
    }
  });
});

describe('refusals', () => {
  it('name the words not understood and suggest the closest events, properties and a rephrasing that works', async () => {
    const { error, response } = await ask('purchases where browser is chrome');
    expect(response.status).toBe(400);
    const details = error!.details as {
      unknown: string[];
      suggestions: { events: string[]; properties: string[]; rephrasings: string[] };
      examples: string[];
    };
    expect(error!.code).toBe('QUERY_NOT_UNDERSTOOD');
    expect(details.unknown.join(' ')).toMatch(/browser|chrome/);
    expect(details.suggestions.events.length).toBeGreaterThan(0);
    expect(details.suggestions.properties.length).toBeGreaterThan(0);
    expect(details.suggestions.rephrasings.length).toBeGreaterThan(0);
    for (const q of [...details.suggestions.rephrasings, ...details.examples]) {
      const r = await ask(q);
      expect(r.error, q).toBeUndefined();
    }
  });

  it('suggest the app event closest to a misnamed one', async () => {
    const { error } = await ask('how many page views last week');
    const details = error!.details as { unknown: string[]; suggestions: { events: string[] } };
    expect(details.unknown).toContain('page');
    expect(details.suggestions.events).toContain('item_view');
  });

  it('refuse a filter on a user property applied to events that do not carry it? no: it is joined', async () => {
    const { data, error } = await ask('total revenue where plan is premium last month');
    expect(error).toBeUndefined();
    expect(normalise(data!.data)).toEqual([{ value: 911.56 }]);
    expect(data!.sql).toMatch(/from users/);
  });
});
