// POST /v1/audiences with criteria the rules engine does not understand, through a language model
// (a fake OpenAI server): the rules engine first, then the model's condition AST checked and compiled
// like the engine's, then SQL the model writes, run in the SQL sandbox (or refused by it), and
// QUERY_NOT_UNDERSTOOD when the model cannot help. The rules engine itself is in audiences.test.ts;
// the users and events are in audiences-helpers.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audienceMembers } from '../../server/src/audiences/audiences.js';
import { loadUsers, serviceContext } from '../fixtures/audience-data.js';
import { type FakeOpenAi, startFakeOpenAi } from '../helpers/fake-openai.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';
import { USERS } from './audiences-helpers.js';

describe('criteria the rules engine does not understand, with a language model', () => {
  let llmServer: TestServer;
  let fake: FakeOpenAi;
  let t: Tenant;
  const answers = new Map<string, unknown>();

  beforeAll(async () => {
    fake = await startFakeOpenAi((req) => {
      const criteria = req.messages.find((m) => m.role === 'user')?.content ?? '';
      const schema = req.response_format?.json_schema?.name;
      const answer = answers.get(`${schema}:${criteria}`) ?? answers.get(criteria);
      if (answer === undefined) return { status: 500, body: { error: { message: 'boom', type: 'server_error' } } };
      return JSON.stringify(answer);
    });
    llmServer = await startTestServer({ LLM_BASE_URL: fake.baseUrl, LLM_API_KEY: 'test' });
    t = await llmServer.createTenant();
    await loadUsers(t.client, llmServer.db.knex, t.app.id, USERS);
  });
  afterAll(async () => {
    await llmServer?.close();
    await fake?.close();
  });

  const ask = (criteria: string) =>
    t.client.audiencesCreate({ body: { app_id: t.app.id, name: 'LLM audience', criteria } });

  it('uses the rules engine first and does not call the model for criteria it understands', async () => {
    const calls = fake.requests.length;
    const { data } = await ask('users who did purchase');
    expect(data).toMatchObject({ query_method: 'rules', confidence: 1, user_count: 2 });
    expect(fake.requests.length).toBe(calls);
  });

  it("lets the model fill the same condition AST (structured output), checked and compiled like the engine's", async () => {
    const criteria = 'our most loyal shoppers';
    const none = { of: null, events: null, filters: null, period: null, times: null, total: null, filter: null };
    answers.set(`audience_criteria:${criteria}`, {
      understood: true,
      confidence: 0.8,
      where: {
        ...none,
        type: 'did',
        events: ['purchase'],
        filters: [],
        times: { gt: null, gte: 2, lt: null, lte: null },
      },
    });
    const { data, error } = await ask(criteria);
    expect(error).toBeUndefined();
    // ann has four purchases; ben one; eve's are bot traffic
    expect(data).toMatchObject({ success: true, query_method: 'llm', confidence: 0.8, user_count: 1 });
    expect(data!.interpretation).toBe('users who did "purchase" event at least 2 times');
    const request = fake.requests.at(-1)!;
    expect(request.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'audience_criteria', strict: true, schema: { type: 'object', additionalProperties: false } },
    });
    expect(request.messages[0]!.content).toContain('event "purchase"');
    const row = await llmServer.db.knex('audiences').where({ id: data!.audience_id }).first();
    expect(row).toMatchObject({
      query_method: 'llm',
      sql: null,
      definition: { version: 2, where: { type: 'did', events: ['purchase'] } },
    });
    expect(
      (
        await audienceMembers(serviceContext(llmServer), t.app.id, data!.audience_id, { limit: 10, offset: 0 })
      ).users.map((u) => u.user_id),
    ).toEqual(['ann']);
  });

  it('does not trust a model condition naming what the app does not have: it falls back to SQL, else refuses', async () => {
    const criteria = 'whales of the spring sale';
    answers.set(`audience_criteria:${criteria}`, {
      understood: true,
      confidence: 0.9,
      where: {
        type: 'did',
        of: null,
        events: ['refund'],
        filters: [],
        period: null,
        times: null,
        total: null,
        filter: null,
      },
    });
    answers.set(`audience_sql:${criteria}`, { sql: '', confidence: 0 });
    const { error, response } = await ask(criteria);
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: 'QUERY_NOT_UNDERSTOOD' });
    expect(fake.requests.at(-1)!.response_format).toMatchObject({ json_schema: { name: 'audience_sql' } });
  });

  it('runs the SQL the model writes in the sandbox and stores it with the stated confidence', async () => {
    const criteria = 'people who bought something but never signed up';
    answers.set(criteria, {
      sql: "select distinct user_id from events where event_name = 'purchase' and user_id not in (select user_id from events where event_name = 'signup' and created_at > now() - interval '35 days');",
      confidence: 0.72,
    });
    const { data, error } = await ask(criteria);
    expect(error).toBeUndefined();
    // ann signed up 40 days ago (outside the window), ben 3 days ago; eve's purchases are bot traffic.
    expect(data).toMatchObject({ success: true, query_method: 'llm_sql', confidence: 0.72, user_count: 1 });
    const request = fake.requests.at(-1)!;
    expect(request.response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'audience_sql' } });
    expect(request.messages[0]!.content).toContain('events(id, user_id, event_name, properties jsonb, created_at)');
    const row = await llmServer.db.knex('audiences').where({ id: data!.audience_id }).first();
    expect(row).toMatchObject({ query_method: 'llm_sql', confidence: 0.72, definition: null, user_count: '1' });
    expect(row.sql).toContain("event_name = 'purchase'");
    const page = await audienceMembers(serviceContext(llmServer), t.app.id, data!.audience_id, {
      limit: 10,
      offset: 0,
    });
    expect(page).toEqual({
      total: 1,
      users: [{ user_id: 'ann', email: 'ann@shop.io', phone: null, last_active: expect.any(String) }],
    });
  });

  it.each([
    ['delete from users', 'a statement that changes data'],
    ['select user_id from apps', 'a table outside the sandbox'],
    ['select user_id from public.users', 'a schema-qualified name'],
    ['select user_id from users; drop table users', 'two statements'],
  ])('refuses SQL the sandbox refuses (%s: %s) and stores nothing', async (sql) => {
    const criteria = `criteria answered with ${sql}`;
    answers.set(criteria, { sql, confidence: 0.9 });
    const before = await llmServer.db.knex('audiences').where({ app_id: t.app.id }).count<{ n: string }[]>('* as n');
    const { error, response } = await ask(criteria);
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: 'QUERY_REJECTED' });
    const after = await llmServer.db.knex('audiences').where({ app_id: t.app.id }).count<{ n: string }[]>('* as n');
    expect(after[0]!.n).toBe(before[0]!.n);
  });

  it('refuses SQL that returns no user_id column', async () => {
    answers.set('the newsletter mailing list', { sql: 'select email from users', confidence: 0.9 });
    const { error, response } = await ask('the newsletter mailing list');
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: 'QUERY_REJECTED', message: expect.stringContaining('user_id') });
  });

  it('answers QUERY_NOT_UNDERSTOOD when the model cannot express the criteria, or fails', async () => {
    answers.set('users who like cats', { sql: '', confidence: 0 });
    const declined = await ask('users who like cats');
    expect(declined.response.status).toBe(400);
    expect(declined.error).toMatchObject({ code: 'QUERY_NOT_UNDERSTOOD', details: { examples: expect.any(Array) } });
    const failed = await ask('users the model fails on'); // the fake answers 500
    expect(failed.response.status).toBe(400);
    expect(failed.error).toMatchObject({
      code: 'QUERY_NOT_UNDERSTOOD',
      message: expect.stringContaining('language model'),
    });
  });
});
