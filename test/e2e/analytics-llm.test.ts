// Natural language through a configured language model (a local fake of OpenAI's API): the
// built-in engine goes first; otherwise the model fills the same query AST through structured
// output (JSON Schema), validated against the app and compiled like the engine's own
// (query_method llm); SQL written by the model is the last resort and runs in the same sandbox,
// so SQL reaching for a forbidden table is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChatRequest, type FakeOpenAi, startFakeOpenAi } from '../helpers/fake-openai.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let fake: FakeOpenAi;
let server: TestServer;
let tenant: Tenant;
let answer: (req: ChatRequest) => string | { status: number; body: unknown } = () => '{}';

beforeAll(async () => {
  fake = await startFakeOpenAi((req) => answer(req));
  server = await startTestServer({ LLM_BASE_URL: fake.baseUrl, LLM_API_KEY: 'sk-test', LLM_MODEL: 'fake-model' });
  tenant = await server.createTenant();
  await tenant.client.eventsTrackBatch({
    body: {
      events: [
        { user_id: 'l1', event_name: 'purchase', properties: { revenue: 12.5, coupon: 'SPRING' } },
        { user_id: 'l2', event_name: 'purchase', properties: { revenue: 7.5 } },
        { user_id: 'l2', event_name: 'login' },
      ],
    },
  });
});
afterAll(async () => {
  await server?.close();
  await fake?.close();
});

const ask = (query: string) => tenant.client.analyticsQuery({ body: { app_id: tenant.app.id, query } });
const schemaOf = (req: ChatRequest) => req.response_format?.json_schema?.name;
const none = {
  fn: null,
  key: null,
  metric: null,
  day: null,
  numerator: null,
  denominator: null,
  percent: null,
  from: null,
  to: null,
};
const ast = (over: Record<string, unknown>) => ({
  understood: true,
  confidence: 0.7,
  measure: { ...none, kind: 'events' },
  events: { events: [], filters: [] },
  segment: null,
  period: null,
  bucket: null,
  groupBy: null,
  percent: null,
  having: null,
  order: null,
  limit: null,
  compare: null,
  ...over,
});

describe('the model fills the query AST', () => {
  it('is asked with the JSON Schema of the AST when the built-in engine does not understand, and its query is compiled', async () => {
    answer = () =>
      JSON.stringify(
        ast({
          events: { events: ['purchase'], filters: [{ key: 'coupon', op: 'exists', values: [] }] },
          measure: { ...none, kind: 'events' },
        }),
      );
    const before = fake.requests.length;
    const { data, error } = await ask('which share of buyers used a coupon code');
    expect(error).toBeUndefined();
    expect(data).toMatchObject({
      success: true,
      data: [{ value: 1 }],
      rows_returned: 1,
      query_method: 'llm',
      truncated: false,
    });
    expect(data!.interpretation).toContain('"purchase" events where coupon is set');
    expect(fake.requests).toHaveLength(before + 1);
    const request = fake.requests.at(-1)!;
    expect(request.model).toBe('fake-model');
    expect(request.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'analytics_query', strict: true, schema: { type: 'object', additionalProperties: false } },
    });
    expect(request.messages.at(-1)).toMatchObject({
      role: 'user',
      content: 'which share of buyers used a coupon code',
    });
    expect(request.messages[0]!.content).toContain('event "purchase"');
    expect(request.messages[0]!.content).toContain('coupon');
  });

  it('tries the built-in engine first and does not call the model for a question it understands', async () => {
    const before = fake.requests.length;
    const { data } = await ask('total revenue');
    expect(data).toMatchObject({ query_method: 'rules', data: [{ value: 20 }] });
    expect(fake.requests).toHaveLength(before);
  });

  it('does not run a model query that names an event the app does not have: SQL is asked for instead', async () => {
    const sql = "SELECT count(*) AS value FROM events WHERE event_name = 'login'";
    answer = (req) =>
      schemaOf(req) === 'analytics_query'
        ? JSON.stringify(ast({ events: { events: ['sign_in'], filters: [] } }))
        : JSON.stringify({ sql, explanation: 'Logins, all time.' });
    const { data, error } = await ask('how often do people sign in');
    expect(error).toBeUndefined();
    expect(data).toMatchObject({
      query_method: 'llm_sql',
      data: [{ value: 1 }],
      sql,
      interpretation: 'Logins, all time.',
    });
    expect(schemaOf(fake.requests.at(-1)!)).toBe('analytics_sql');
    expect(fake.requests.at(-1)!.messages[0]!.content).toContain('events(id uuid, user_id text, event_name text');
  });
});

describe('SQL written by the model', () => {
  it('runs in the sandbox when the model cannot fill the AST', async () => {
    const sql = "SELECT count(*) AS purchases_with_coupon FROM events WHERE properties ? 'coupon'";
    answer = (req) =>
      schemaOf(req) === 'analytics_query'
        ? JSON.stringify({ ...ast({}), understood: false })
        : JSON.stringify({ sql, explanation: 'Purchases that used a coupon.' });
    const { data, error } = await ask('coupon usage overall, roughly');
    expect(error).toBeUndefined();
    expect(data).toMatchObject({ data: [{ purchases_with_coupon: 1 }], query_method: 'llm_sql', sql });
  });

  it('refuses model SQL that reaches outside the sandbox', async () => {
    for (const sql of ['SELECT key_hash FROM api_keys', 'SELECT * FROM public.users', 'DELETE FROM events']) {
      answer = (req) => (schemaOf(req) === 'analytics_query' ? '{}' : JSON.stringify({ sql, explanation: 'x' }));
      const { error, response } = await ask('show me everything about the keys');
      expect(response.status, sql).toBe(400);
      expect(error, sql).toMatchObject({ code: 'QUERY_REJECTED' });
    }
  });

  it('answers QUERY_NOT_UNDERSTOOD, with suggestions, when the model fails', async () => {
    answer = () => ({ status: 500, body: { error: { message: 'boom', type: 'server_error' } } });
    const { error, response } = await ask('how did the spring campaign feel');
    expect(response.status).toBe(400);
    expect(error).toMatchObject({
      code: 'QUERY_NOT_UNDERSTOOD',
      message: expect.stringContaining('language model'),
      details: {
        examples: expect.any(Array),
        unknown: expect.any(Array),
        suggestions: { events: expect.arrayContaining(['purchase']) },
      },
    });
  });
});
