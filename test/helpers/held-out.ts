// The held-out cases of issue 34 (test/fixtures/nl-held-out*.json): questions and audience criteria
// in the words people use, written before the engine was changed and never tuned to. Each must be
// answered with the rows of its hand-written reference SQL or refused: a refusal is allowed, a
// confident wrong number is not. The score is reported by family.
import fs from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { audienceMembers } from '../../server/src/audiences/audiences.js';
import { type CaseFile, type DemoApp, normalise, startDemoApp } from './demo-app.js';

interface Case {
  family: string;
  reference_sql?: string | null;
  expected?: unknown[];
  refused?: boolean;
  /** "numbers": compare only the numbers of each row (period labels are the engine's wording). */
  check?: 'numbers';
}
type Question = Case & { question: string };
type Criteria = Case & { criteria: string };
type HeldOut = CaseFile & { questions: Question[]; criteria: Criteria[] };
type Outcome = 'right' | 'refused' | 'wrong';

/** A row as its values in order, or only its numbers: column names are the engine's wording. */
const values = (rows: Record<string, unknown>[], only?: 'numbers') =>
  rows.map((r) => Object.values(r).filter((v) => only !== 'numbers' || typeof v === 'number'));

async function answerQuestion(demo: DemoApp, c: Question): Promise<Outcome> {
  const { data, response } = await demo.client.analyticsQuery({ body: { app_id: demo.appId, query: c.question } });
  expect(response.status, c.question).toBeLessThan(500);
  if (response.status === 400) return c.refused ? 'right' : 'refused';
  if (c.refused) return 'wrong';
  const got = values(normalise(data!.data), c.check);
  const want = values(c.expected as Record<string, unknown>[], c.check);
  return JSON.stringify(got) === JSON.stringify(want) ? 'right' : 'wrong';
}

async function answerCriteria(demo: DemoApp, c: Criteria): Promise<Outcome> {
  const { data, response } = await demo.client.audiencesCreate({
    body: { app_id: demo.appId, name: c.criteria.slice(0, 100), criteria: c.criteria },
  });
  expect(response.status, c.criteria).toBeLessThan(500);
  if (response.status === 400) return c.refused ? 'right' : 'refused';
  if (c.refused) return 'wrong';
  const page = await audienceMembers(demo.ctx, demo.appId, data!.audience_id, { limit: 1000, offset: 0 });
  const ids = page.users.map((u) => u.user_id).sort();
  return JSON.stringify(ids) === JSON.stringify(c.expected) ? 'right' : 'wrong';
}

/** The tests of one held-out file: its size, its reference SQL, and the engine's score on it. */
export function heldOutSuite(file: string, minimum: { cases: number; families: number; refused: number }) {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as HeldOut;
  const all = [...doc.questions, ...doc.criteria];
  let demo: DemoApp;
  beforeAll(async () => {
    demo = await startDemoApp(doc);
  }, 120_000);
  afterAll(() => demo?.close());

  it(`has at least ${minimum.cases} held-out cases over the families, some to refuse`, () => {
    expect(all.length).toBeGreaterThanOrEqual(minimum.cases);
    expect(new Set(all.map((c) => c.family)).size).toBeGreaterThanOrEqual(minimum.families);
    expect(all.filter((c) => c.refused).length).toBeGreaterThanOrEqual(minimum.refused);
  });

  it('reference SQL still gives the recorded results', async () => {
    const update = process.env.UPDATE_NL_CASES === '1';
    for (const c of all.filter((x) => x.reference_sql)) {
      const rows = await demo.reference(c.reference_sql!);
      const got = 'criteria' in c ? rows.map((r) => String(r.user_id)) : rows;
      if (update) c.expected = got;
      else expect(got, c.reference_sql!).toEqual(c.expected);
    }
    if (update) fs.writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  }, 120_000);

  it('answers exactly or refuses: never a confident wrong number', async () => {
    const score = { right: 0, refused: 0, wrong: [] as string[] };
    const byFamily = new Map<string, { right: number; of: number }>();
    const tally = (family: string, text: string, outcome: Outcome) => {
      const f = byFamily.get(family) ?? { right: 0, of: 0 };
      f.of++;
      if (outcome === 'right') f.right++;
      byFamily.set(family, f);
      if (process.env.NL_VERBOSE === '1') console.info(`${outcome.padEnd(7)} ${text}`);
      if (outcome === 'right') score.right++;
      else if (outcome === 'refused') score.refused++;
      else score.wrong.push(text);
    };
    for (const c of doc.questions) tally(c.family, c.question, await answerQuestion(demo, c));
    for (const c of doc.criteria) tally(c.family, c.criteria, await answerCriteria(demo, c));
    console.info(
      `held-out cases (${file.split('/').pop()}): ${score.right}/${all.length} answered exactly, ${score.refused} refused, ${score.wrong.length} wrong\n` +
        [...byFamily].map(([f, s]) => `  ${f}: ${s.right}/${s.of}`).join('\n'),
    );
    expect(score.wrong).toEqual([]);
  }, 180_000);
}
