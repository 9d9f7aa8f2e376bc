// Every registered tool tells the truth about its output, checked as real clients check it: the
// SDK's Client lists the tools over Streamable HTTP (after which it validates every
// structuredContent against the advertised outputSchema itself), calls each tool with arguments
// that work and arguments that fail, and every structuredContent is also validated with ajv
// against the listed schema, so a failure names the field. The calls come from CASES, keyed by
// tool name: a tool registered later without an entry fails the first test, so it cannot go
// unchecked. Also: every schema is small and free of the forms the Inspector's --strict flags,
// and app_id follows the same single-app rule in every tool that takes it.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import { createTallyClient } from '@tally/client';
import { Ajv, type ErrorObject } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp } from '../helpers/mcp-client.js';
import { lintSchema } from '../helpers/schema-lint.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

type Args = Record<string, unknown>;
interface Seeded {
  app: string;
  otherApp: string;
  campaign: string;
  audience: string;
}
interface Case {
  /** Calls that must succeed (a result without isError, its structuredContent matching the schema). */
  valid: Args[];
  /** Calls that must fail: a result with isError, or a protocol error for arguments the schema refuses. */
  failing: Args[];
}

const SQL = 'SELECT event_name, count(*) AS n, max(created_at) AS last_at FROM events GROUP BY 1';
/** Rows with JSON objects, arrays, nulls and timestamps in them. */
const ROWS_SQL = 'SELECT event_name, properties, created_at, user_id FROM events ORDER BY created_at LIMIT 20';

/** Arguments for every tool. A new tool needs an entry here (the first test says so). */
const CASES: Record<string, (s: Seeded) => Case> = {
  query_analytics: (s) => ({
    valid: [
      { query: SQL },
      { query: ROWS_SQL },
      { app_id: s.app, query: 'top 5 events this month' },
      { query: 'daily active users last week' },
    ],
    failing: [
      { query: 'DROP TABLE events' },
      { query: 'flibbertigibbet wobble sprocket' },
      { app_id: s.otherApp, query: SQL },
      { query: '' },
    ],
  }),
  get_metrics: (s) => ({
    valid: [{ metric: 'dau' }, { app_id: s.app, metric: 'revenue', granularity: 'week' }],
    failing: [{ metric: 'nope' }, { metric: 'dau', start_date: '2026-02-30' }, { app_id: s.otherApp, metric: 'dau' }],
  }),
  get_funnel: (s) => ({
    valid: [
      { events: ['view_item', 'purchase'] },
      { app_id: s.app, events: ['signup', 'nobody_did_this'], time_window: 3 },
    ],
    failing: [{ events: ['only_one'] }, { app_id: s.otherApp, events: ['a', 'b'] }],
  }),
  query_events: (s) => ({
    valid: [{}, { app_id: s.app, event_name: 'purchase', limit: 2, offset: 1 }],
    failing: [{ user_id: 'nobody-here' }, { limit: 0 }, { app_id: s.otherApp }],
  }),
  list_event_dictionary: (s) => ({
    valid: [{}, { app_id: s.app, include_archived: true, search: 'VIEW', limit: 1 }],
    failing: [{ limit: 501 }, { app_id: s.otherApp }],
  }),
  update_event_definition: () => ({
    valid: [
      { event_name: 'purchase', description: 'A completed order', properties: { revenue: 'Order total' } },
      { event_name: 'signup', display_name: null, category: 'account' },
    ],
    failing: [{ event_name: 'never_tracked', description: 'x' }, { description: 'names no event' }],
  }),
  get_app_versions: (s) => ({
    valid: [{}, { app_id: s.app, start_date: '2026-02-01', end_date: '2026-02-28' }],
    failing: [{ start_date: 'not a date' }, { app_id: s.otherApp }],
  }),
  create_audience: (s) => ({
    valid: [
      { name: 'Buyers', description: 'users who did purchase' },
      { app_id: s.app, name: 'Everyone', description: 'all users' },
    ],
    failing: [
      { name: 'x', description: 'qwertyuiop asdfghjkl zxcvbnm' },
      { name: '', description: 'all users' },
    ],
  }),
  create_push_campaign: (s) => ({
    valid: [
      {
        name: 'Thanks',
        title: 'Thank you',
        message: 'Thanks {{first_name}}',
        schedule_type: 'trigger',
        trigger_event_name: 'purchase',
        audience_id: s.audience,
      },
    ],
    failing: [
      { name: 'x', title: 'x', message: 'x', schedule_type: 'now' },
      { name: 'x', title: 'x', message: 'x', schedule_type: 'trigger', audience_id: 'no-such-audience' },
    ],
  }),
  list_push_campaigns: (s) => ({
    valid: [{}, { app_id: s.app, status: 'scheduled', limit: 1 }],
    failing: [{ status: 'gone' }, { app_id: s.otherApp }],
  }),
  get_campaign_status: (s) => ({
    valid: [{ campaign_id: s.campaign }],
    failing: [{ campaign_id: '00000000-0000-4000-8000-000000000000' }, {}],
  }),
};

interface ListedTool {
  name: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
}

let server: TestServer;
let tenant: Tenant;
let other: Tenant;
let seeded: Seeded;
let client: Client;
let tools: ListedTool[];
const ajv = new Ajv({ allErrors: true, strict: false });

/** ajv's complaints about `data` under the tool's advertised output schema, each naming its field. */
function outputErrors(tool: ListedTool, data: unknown): string[] {
  const validate = ajv.compile(tool.outputSchema!);
  if (validate(data)) return [];
  return (validate.errors ?? []).map((e: ErrorObject) => {
    const extra = (e.params as { additionalProperty?: string }).additionalProperty;
    return `${e.instancePath || '/'} ${e.message}${extra ? `: ${extra}` : ''}`;
  });
}

/**
 * Calls a tool as the SDK client does after listTools (it validates structuredContent itself and
 * throws on a mismatch), and checks the structuredContent with ajv too. When the SDK client refuses
 * the result, the same call is made without its check (`client.request`) so that ajv can say which
 * field is wrong.
 */
async function call(tool: ListedTool, args: Args) {
  try {
    const result = await client.callTool({ name: tool.name, arguments: args });
    const fields = result.structuredContent === undefined ? [] : outputErrors(tool, result.structuredContent);
    return { result, fields };
  } catch (err) {
    const error = err as Error & { code?: number };
    if (!/Structured content/.test(error.message)) return { error, fields: [] };
    const raw = await client.request(
      { method: 'tools/call', params: { name: tool.name, arguments: args } },
      CallToolResultSchema,
    );
    return { error, fields: outputErrors(tool, raw.structuredContent) };
  }
}

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  other = await server.createTenant();
  await tenant.client.usersUpsert({ body: { user_id: 'u-1', email: 'a@example.com', properties: { plan: 'pro' } } });
  await tenant.client.eventsTrackBatch({
    body: {
      events: Array.from({ length: 12 }, (_, i) => ({
        user_id: `u-${i % 4}`,
        event_name: ['signup', 'view_item', 'purchase'][i % 3]!,
        properties:
          i % 3 === 2
            ? { revenue: 10 + i, items: ['a', 'b'], shipping: { country: 'FR', express: i % 2 === 0 }, coupon: null }
            : { page: `/p/${i}` },
      })),
    },
  });
  const admin = createTallyClient({ baseUrl: server.url, adminToken: TEST_ADMIN_TOKEN });
  await admin.adminVersionsAdd({
    path: { app_id: tenant.app.id },
    body: { version: '1.0', released_at: '2026-02-10T09:00:00Z' },
  });
  const audience = await tenant.client.audiencesCreate({
    body: { app_id: tenant.app.id, name: 'Buyers', criteria: 'users who did purchase' },
  });
  const campaign = await admin.adminCampaignsCreate({
    path: { app_id: tenant.app.id },
    body: { name: 'Welcome', title: 't', message: 'm', schedule_type: 'trigger', trigger_event_name: 'signup' },
  });
  seeded = {
    app: tenant.app.id,
    otherApp: other.app.id,
    audience: audience.data!.audience_id,
    campaign: campaign.data!.campaign_id,
  };
  ({ client } = await connectMcp(server.url, tenant.mcpKey));
  tools = (await client.listTools()).tools as ListedTool[];
}, 60_000);
afterAll(async () => {
  await client?.close();
  await server?.close();
});

describe('every tool', () => {
  it('has an entry in CASES (a tool added later is checked as soon as it is registered)', () => {
    const names = tools.map((t) => t.name);
    expect(
      names.filter((n) => !(n in CASES)),
      'tools without CASES',
    ).toEqual([]);
    expect(
      Object.keys(CASES).filter((n) => !names.includes(n)),
      'CASES of no tool',
    ).toEqual([]);
  });

  it('advertises schemas under 16 KB and free of the forms the Inspector --strict flags', () => {
    for (const tool of tools) {
      expect(JSON.stringify(tool.inputSchema).length, tool.name).toBeLessThan(16 * 1024);
      expect(lintSchema(tool.inputSchema), `${tool.name} inputSchema`).toEqual([]);
      expect(tool.outputSchema, tool.name).toBeDefined();
      expect(lintSchema(tool.outputSchema), `${tool.name} outputSchema`).toEqual([]);
    }
  });

  it('returns structuredContent that matches its outputSchema, for the SDK client and for ajv', async () => {
    for (const tool of tools) {
      for (const args of CASES[tool.name]!(seeded).valid) {
        const label = `${tool.name} ${JSON.stringify(args)}`;
        const { result, error, fields } = await call(tool, args);
        expect(fields, `${label}: fields off the advertised outputSchema`).toEqual([]);
        expect(error?.message, label).toBeUndefined(); // the SDK client refuses a result off its schema
        expect(result!.isError, `${label}: ${JSON.stringify(result!.content)}`).toBeFalsy();
        expect(result!.structuredContent, label).toBeDefined();
      }
    }
  }, 120_000);

  it('fails cleanly on arguments that do not work: an error result, never content off its schema', async () => {
    for (const tool of tools) {
      for (const args of CASES[tool.name]!(seeded).failing) {
        const label = `${tool.name} ${JSON.stringify(args)}`;
        const { result, error, fields } = await call(tool, args);
        expect(fields, label).toEqual([]);
        if (error) {
          expect(error.code, `${label}: ${error.message}`).toBe(-32602);
          continue;
        }
        expect(result!.isError, label).toBe(true);
        // our error codes, or the SDK's own refusal of arguments off the input schema
        expect((result!.content as { text: string }[])[0]!.text, label).toMatch(
          /^([A-Z_]+: |MCP error -32602: Input validation error)/,
        );
      }
    }
  }, 120_000);

  it('would be caught with a field the schema does not declare, by ajv and by the SDK client validator', async () => {
    const tool = tools.find((t) => t.name === 'query_analytics')!;
    const { result } = await call(tool, { query: SQL });
    const content = result!.structuredContent as Record<string, unknown>;
    expect(outputErrors(tool, content)).toEqual([]);
    const grown = { ...content, undeclared_field: 1 };
    expect(outputErrors(tool, grown)).toEqual(['/ must NOT have additional properties: undeclared_field']);
    const sdk = new AjvJsonSchemaValidator().getValidator(tool.outputSchema as never)(grown);
    expect(sdk.valid).toBe(false);
  });

  it('takes app_id as optional, choosing the single app, and refuses to guess with several apps', async () => {
    const withAppId = tools.filter((t) => (t.inputSchema.properties as Record<string, unknown>)?.app_id);
    expect(withAppId.map((t) => t.name)).toEqual(
      expect.arrayContaining(['list_event_dictionary', 'update_event_definition', 'get_app_versions']),
    );
    const twoApps = await server.createTenant({ organizationId: other.organization.id });
    const { client: several } = await connectMcp(server.url, twoApps.mcpKey);
    try {
      for (const tool of withAppId) {
        expect((tool.inputSchema.required as string[] | undefined) ?? [], tool.name).not.toContain('app_id');
        const args = CASES[tool.name]!(seeded).valid.find((a) => !('app_id' in a));
        expect(args, `${tool.name}: a valid call without app_id in CASES`).toBeDefined();
        const refused = await several.callTool({ name: tool.name, arguments: args });
        expect(refused.isError, tool.name).toBe(true);
        expect((refused.content as { text: string }[])[0]!.text, tool.name).toMatch(
          /^INVALID_REQUEST: This organization has several apps: pass app_id/,
        );
      }
    } finally {
      await several.close();
    }
  });
});

describe('answers that carry an interpretation', () => {
  it('query_analytics says what it computed, for a question and for SQL', async () => {
    const question = await client.callTool({
      name: 'query_analytics',
      arguments: { query: 'top 5 events this month' },
    });
    const rest = await tenant.client.analyticsQuery({
      body: { app_id: tenant.app.id, query: 'top 5 events this month' },
    });
    expect((question.structuredContent as { interpretation: string }).interpretation).toBe(rest.data!.interpretation);
    expect(rest.data!.interpretation).toMatch(/event/i);
  });

  it('create_audience returns how it understood the description, as REST does', async () => {
    const mcp = await client.callTool({
      name: 'create_audience',
      arguments: { name: 'Pro buyers', description: 'users who did purchase' },
    });
    const rest = await tenant.client.audiencesCreate({
      body: { app_id: tenant.app.id, name: 'Pro buyers (REST)', criteria: 'users who did purchase' },
    });
    expect((mcp.structuredContent as { interpretation?: string }).interpretation).toBe(rest.data!.interpretation);
    expect(rest.data!.interpretation).toMatch(/purchase/);
  });
});
