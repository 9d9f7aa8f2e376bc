// Comparisons with the period just before (issue 34, family 6): "vs the 14 days before", "than the
// day before", "compared with the previous 14 days", "did revenue go up ... compared to last week".
// Each row is checked against reference SQL; a period compared with itself is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoApp, normalise, startDemoApp } from '../helpers/demo-app.js';

const TZ = 'America/New_York';
const doc = {
  seed: { seed: 5, users: 40, days: 30, end_date: '2026-06-17' },
  clock: '2026-06-18T03:30:00Z',
  time_zone: TZ,
};
let demo: DemoApp;
beforeAll(async () => {
  demo = await startDemoApp(doc);
}, 120_000);
afterAll(() => demo?.close());

/** The number of `event` events (or their revenue) from local day `from` to the day before `to`. */
async function figure(event: string, from: string, to: string, revenue = false) {
  const rows = await demo.reference(
    `select ${revenue ? "coalesce(sum((e.properties->>'revenue')::numeric), 0)" : 'count(*)'} as value from events e
     where e.app_id = :app and not e.is_bot and e.event_name = '${event}'
       and e.created_at >= timestamptz '${from} 00:00:00 ${TZ}' and e.created_at < timestamptz '${to} 00:00:00 ${TZ}'`,
  );
  return Number(rows[0]!.value);
}

async function ask(question: string) {
  const { data, error } = await demo.client.analyticsQuery({ body: { app_id: demo.appId, query: question } });
  expect(error, `${question}: ${JSON.stringify(error)}`).toBeUndefined();
  return normalise(data!.data).map((r) => r.value);
}

describe('comparisons with the period before', () => {
  it.each([
    [
      'signups in the last 14 days vs the 14 days before',
      'signup',
      ['2026-06-04', '2026-06-18'],
      ['2026-05-21', '2026-06-04'],
    ],
    [
      'how do signups in the last 14 days compare with the previous 14 days',
      'signup',
      ['2026-06-04', '2026-06-18'],
      ['2026-05-21', '2026-06-04'],
    ],
    [
      'were there more purchases yesterday than the day before',
      'purchase',
      ['2026-06-16', '2026-06-17'],
      ['2026-06-15', '2026-06-16'],
    ],
    [
      'item views this week vs the week before',
      'item_view',
      ['2026-06-15', '2026-06-18'],
      ['2026-06-08', '2026-06-15'],
    ],
  ] as const)('%s', async (question, event, a, b) => {
    expect(await ask(question)).toEqual([await figure(event, a[0], a[1]), await figure(event, b[0], b[1])]);
  });

  it('reads trend words of a comparison ("did revenue go up", "drop") as the comparison', async () => {
    const want = [
      await figure('purchase', '2026-06-15', '2026-06-18', true),
      await figure('purchase', '2026-06-08', '2026-06-15', true),
    ];
    expect(await ask('did revenue go up this week compared to last week')).toEqual(want);
    expect(await ask('did revenue drop this week compared to last week')).toEqual(want);
  });

  it('refuses a period compared with itself, and "the period before" without a period', async () => {
    for (const question of ['purchases this week vs this week', 'purchases vs the week before']) {
      const { response, error } = await demo.client.analyticsQuery({ body: { app_id: demo.appId, query: question } });
      expect(response.status, question).toBe(400);
      expect(error?.code).toBe('QUERY_NOT_UNDERSTOOD');
    }
  });
});
