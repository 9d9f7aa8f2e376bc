// Audience criteria of test/fixtures/audience-criteria.json on seed-demo data with a fixed clock,
// through POST /v1/audiences: each understood criteria must select exactly the users its
// hand-written reference SQL selects (user_count and the members), and the reference must still
// give the recorded `expected`; criteria marked refused must be refused with the words not
// understood, suggestions and examples. The held-out quarter, never tuned to, is checked apart.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audienceMembers } from '../../server/src/audiences/audiences.js';
import { type DemoApp, startDemoApp } from '../helpers/demo-app.js';

interface Case {
  criteria: string;
  reference_sql?: string;
  expected?: string[];
  refused?: boolean;
  held_out?: boolean;
}
const file = path.resolve(import.meta.dirname, '../fixtures/audience-criteria.json');
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

const create = (criteria: string) =>
  demo.client.audiencesCreate({ body: { app_id: demo.appId, name: criteria.slice(0, 100), criteria } });

async function members(audienceId: string): Promise<string[]> {
  const page = await audienceMembers(demo.ctx, demo.appId, audienceId, { limit: 1000, offset: 0 });
  expect(page.total).toBe(page.users.length);
  return page.users.map((u) => u.user_id).sort();
}

it('has at least 60 criteria, some to refuse, and a held-out quarter', () => {
  expect(doc.cases.length).toBeGreaterThanOrEqual(60);
  expect(doc.cases.filter((c) => c.refused).length).toBeGreaterThanOrEqual(10);
  expect(heldOut.length).toBeGreaterThanOrEqual(doc.cases.length / 5);
});

it('reference SQL still selects the recorded users', async () => {
  const update = process.env.UPDATE_NL_CASES === '1';
  for (const c of doc.cases.filter((x) => x.reference_sql)) {
    const ids = (await demo.reference(c.reference_sql!)).map((r) => String(r.user_id)).sort();
    if (update) c.expected = ids;
    else expect(ids, c.criteria).toEqual(c.expected);
  }
  if (update) fs.writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
});

describe('criteria select exactly their users, or are refused', () => {
  it.each(tuned.map((c) => [c.criteria, c] as const))('"%s"', async (criteria, c) => {
    const { data, error, response } = await create(criteria);
    if (c.refused) {
      expect(response.status, JSON.stringify(data)).toBe(400);
      expect(error).toMatchObject({ success: false, code: 'QUERY_NOT_UNDERSTOOD' });
      const details = error!.details as { examples: string[]; reason: string; unknown: string[]; suggestions: object };
      expect(details.examples.length).toBeGreaterThan(3);
      expect(details.reason).toEqual(expect.any(String));
      expect(details.suggestions).toMatchObject({ events: expect.any(Array), properties: expect.any(Array) });
      expect(error!.message).toContain(criteria);
      return;
    }
    expect(error, JSON.stringify(error)).toBeUndefined();
    expect(data).toMatchObject({ success: true, query_method: 'rules', confidence: 1, user_count: c.expected!.length });
    expect(data!.interpretation).toEqual(expect.any(String));
    expect(await members(data!.audience_id)).toEqual(c.expected);
  });
});

it('held-out criteria: no server error, no wrong audience, and at least 85% right', async () => {
  const outcome = { right: 0, refused: 0, wrong: [] as string[] };
  for (const c of heldOut) {
    const { data, response } = await create(c.criteria);
    expect(response.status, c.criteria).toBeLessThan(500);
    if (response.status === 400) {
      if (c.refused) outcome.right++;
      else outcome.refused++;
      continue;
    }
    if (!c.refused && JSON.stringify(await members(data!.audience_id)) === JSON.stringify(c.expected)) outcome.right++;
    else outcome.wrong.push(c.criteria);
  }
  console.info(
    `held-out criteria: ${outcome.right}/${heldOut.length} right, ${outcome.refused} refused, ${outcome.wrong.length} wrong`,
  );
  expect(outcome.wrong).toEqual([]);
  expect(outcome.right / heldOut.length).toBeGreaterThanOrEqual(0.85);
});

it('means the same periods as analytics: "last month" is the previous calendar month in both', async () => {
  const { data } = await create('users who did purchase last month');
  const q = await demo.client.analyticsQuery({
    body: { app_id: demo.appId, query: 'how many users did purchase last month' },
  });
  expect(q.data!.data).toEqual([{ value: data!.user_count }]);
  expect(data!.interpretation).toContain('last month (2026-02-01 to 2026-02-28)');
  expect(q.data!.interpretation).toContain('last month (2026-02-01 to 2026-02-28)');
});
