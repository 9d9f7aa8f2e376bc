// Natural language through a configured language model (a local fake of OpenAI's API): the
// built-in engine goes first; otherwise the model writes SQL (structured output) that runs in the
// same sandbox, so SQL reaching for a forbidden table is refused.
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

describe('LLM-written SQL', () => {
  it('asks the model with a JSON schema when the built-in engine does not understand, and runs its SQL', async () => {
    const sql = "SELECT count(*) AS purchases_with_coupon FROM events WHERE properties ? 'coupon'";
    answer = () => JSON.stringify({ sql, explanation: 'Purchases that used a coupon.' });
    const before = fake.requests.length;
    const { data, error } = await ask('which share of buyers used a coupon code');
    expect(error).toBeUndefined();
    expect(data).toMatchObject({
      success: true,
      data: [{ purchases_with_coupon: 1 }],
      rows_returned: 1,
      query_method: 'llm_sql',
      sql,
      truncated: false,
    });
    expect(fake.requests).toHaveLength(before + 1);
    const request = fake.requests.at(-1)!;
    expect(request.model).toBe('fake-model');
    expect(request.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } });
    expect(request.messages.at(-1)).toMatchObject({
      role: 'user',
      content: 'which share of buyers used a coupon code',
    });
    expect(request.messages[0]!.content).toContain('events(id uuid, user_id text, event_name text');
  });

  it('tries the built-in engine first and does not call the model for a question it understands', async () => {
    const before = fake.requests.length;
    const { data } = await ask('total revenue');
    expect(data).toMatchObject({ query_method: 'rules', data: [{ total_revenue: 20 }] });
    expect(fake.requests).toHaveLength(before);
  });

  it('refuses model SQL that reaches outside the sandbox', async () => {
    for (const sql of ['SELECT key_hash FROM api_keys', 'SELECT * FROM public.users', 'DELETE FROM events']) {
      answer = () => JSON.stringify({ sql, explanation: 'x' });
      const { error, response } = await ask('show me everything about the keys');
      expect(response.status, sql).toBe(400);
      expect(error, sql).toMatchObject({ code: 'QUERY_REJECTED' });
    }
  });

  it('answers QUERY_NOT_UNDERSTOOD when the model fails', async () => {
    answer = () => ({ status: 500, body: { error: { message: 'boom', type: 'server_error' } } });
    const { error, response } = await ask('how did the spring campaign feel');
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: 'QUERY_NOT_UNDERSTOOD', details: { examples: expect.any(Array) } });
  });
});
