// The MCP transport that talks back, through the SDK's own client over HTTP: a person's
// confirmation before a push campaign (elicitation: accept, decline, cancel, no answer; an answer
// that reaches another instance, relayed through Redis, and lost without it; clients that did not
// declare elicitation are never asked), and log messages at the level the session set, read back
// on every request and on another instance.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type CallToolResult,
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** A short confirmation timeout, so that "no answer" is tested in seconds. */
const TIMEOUT = { MCP_CONFIRMATION_TIMEOUT_SECONDS: '3' };

let a: TestServer; // with Redis
let b: TestServer; // a second instance on a's database, with Redis
let lone: TestServer; // a second instance on a's database, without Redis
let t: Tenant;
const clients: Client[] = [];
const proxies: http.Server[] = [];

beforeAll(async () => {
  a = await startTestServer({ REDIS_URL, ...TIMEOUT });
  b = await startTestServer({ REDIS_URL, ...TIMEOUT }, { database: a.db });
  lone = await startTestServer(TIMEOUT, { database: a.db });
  t = await a.createTenant();
  const { error } = await t.client.eventsTrackBatch({
    body: {
      events: ['ann', 'bob', 'cid'].map((user_id) => ({ user_id, event_name: 'purchase', properties: { revenue: 5 } })),
    },
  });
  expect(error).toBeUndefined();
}, 90_000);
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  for (const p of proxies) p.close();
  await lone?.close();
  await b?.close();
  await a?.close();
});

type Handler = (request: ElicitRequest) => Promise<ElicitResult>;

interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Every JSON-RPC method the server sent this client on its response streams. */
  serverMethods: string[];
  logs: { level: string; data: Record<string, unknown> }[];
}

async function connect(url: string, options: { elicit?: Handler; sessionId?: string } = {}): Promise<Connected> {
  const serverMethods: string[] = [];
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { 'X-MCP-API-Key': t.mcpKey } },
    sessionId: options.sessionId,
    // Reads what the server streams back, to see every request it sends (elicitation/create).
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
        void res
          .clone()
          .text()
          .then((body) => {
            for (const m of body.matchAll(/"method":"([^"]+)"/g)) serverMethods.push(m[1]!);
          })
          .catch(() => {});
      }
      return res;
    },
  });
  const client = new Client(
    { name: 'tally-test', version: '1.0.0' },
    { capabilities: options.elicit ? { elicitation: {} } : {} },
  );
  const logs: Connected['logs'] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push({ level: n.params.level, data: n.params.data as Record<string, unknown> });
  });
  if (options.elicit) client.setRequestHandler(ElicitRequestSchema, options.elicit);
  await client.connect(transport);
  if (!options.sessionId) await client.listTools(); // as every real client does
  clients.push(client);
  return { client, transport, serverMethods, logs };
}

/**
 * One address in front of two instances: the client's answers to server requests (JSON-RPC
 * responses) go to `answers`, everything else to `calls`, as a load balancer may split them.
 */
async function splitProxy(calls: string, answers: string) {
  const routed = { calls: 0, answers: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let isAnswer = false;
      try {
        const parsed = JSON.parse(body.toString('utf8'));
        const all = Array.isArray(parsed) ? parsed : [parsed];
        isAnswer = all.length > 0 && all.every((m) => m.method === undefined && ('result' in m || 'error' in m));
      } catch {}
      if (req.method === 'POST') routed[isAnswer ? 'answers' : 'calls']++;
      const target = new URL(isAnswer ? answers : calls);
      const forward = http.request(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
        (upstream) => {
          res.writeHead(upstream.statusCode ?? 502, upstream.headers);
          upstream.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxies.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, routed };
}

const campaignArgs = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  title: 'Thank you',
  message: 'Thanks for your order',
  schedule_type: 'trigger',
  trigger_event_name: 'purchase',
  ...extra,
});

const campaignsNamed = async (name: string) =>
  a.db.knex('campaigns').where({ app_id: t.app.id, name }).select('id', 'created_by_kind');
const audiencesNamed = async (name: string) =>
  a.db.knex('audiences').where({ app_id: t.app.id }).where('name', 'like', `${name}%`).select('id');

function codeOf(result: CallToolResult): string {
  expect(result.isError).toBe(true);
  return (result.content[0] as { text: string }).text.split(':')[0]!;
}

describe('confirmation before a push campaign (elicitation)', () => {
  it('shows the person what would be sent, and creates the campaign on accept', async () => {
    const asked: ElicitRequest[] = [];
    const { client } = await connect(a.url, {
      elicit: async (request) => {
        asked.push(request);
        // nothing is stored while the person reads it
        expect(await campaignsNamed('Accepted')).toEqual([]);
        return { action: 'accept', content: { confirm: true } };
      },
    });
    const result = (await client.callTool({
      name: 'create_push_campaign',
      arguments: campaignArgs('Accepted'),
    })) as CallToolResult;
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(asked).toHaveLength(1);
    const message = asked[0]!.params.message;
    expect(message).toContain('"Accepted"');
    expect(message).toContain('every user of the app, 3 users now');
    expect(message).toContain('each time a user does "purchase"');
    expect(message).toContain('"Thanks for your order"');
    expect(asked[0]!.params.mode).toBe('form');
    const stored = await campaignsNamed('Accepted');
    expect(stored).toEqual([
      { id: (result.structuredContent as { campaign_id: string }).campaign_id, created_by_kind: 'mcp' },
    ]);
  });

  for (const [action, answer] of [
    ['decline', { action: 'decline' }],
    ['cancel', { action: 'cancel' }],
    ['accept with confirm off', { action: 'accept', content: { confirm: false } }],
  ] as const) {
    it(`creates nothing, not even the audience, on ${action}`, async () => {
      const name = `Refused ${action}`;
      const { client } = await connect(a.url, { elicit: async () => answer as ElicitResult });
      const result = (await client.callTool({
        name: 'create_push_campaign',
        arguments: campaignArgs(name, { audience_prompt: 'users who did purchase' }),
      })) as CallToolResult;
      expect(codeOf(result)).toBe('CONFIRMATION_DECLINED');
      expect(await campaignsNamed(name)).toEqual([]);
      expect(await audiencesNamed(name)).toEqual([]);
    });
  }

  it('creates nothing when the person never answers', async () => {
    const { client } = await connect(a.url, { elicit: () => new Promise<ElicitResult>(() => {}) });
    const result = (await client.callTool({
      name: 'create_push_campaign',
      arguments: campaignArgs('Unanswered', { audience_prompt: 'users who did purchase' }),
    })) as CallToolResult;
    expect(codeOf(result)).toBe('CONFIRMATION_DECLINED');
    expect((result.content[0] as { text: string }).text).toContain('did not answer');
    expect(await campaignsNamed('Unanswered')).toEqual([]);
    expect(await audiencesNamed('Unanswered')).toEqual([]);
  });

  it('completes the call when the answer reaches another instance (relayed through Redis)', async () => {
    const proxy = await splitProxy(a.url, b.url);
    const { client } = await connect(proxy.url, {
      elicit: async () => ({ action: 'accept', content: { confirm: true } }),
    });
    const result = (await client.callTool({
      name: 'create_push_campaign',
      arguments: campaignArgs('Relayed'),
    })) as CallToolResult;
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(proxy.routed.answers).toBe(1); // the answer went to the other instance
    expect(await campaignsNamed('Relayed')).toHaveLength(1);
  });

  it('without Redis, an answer that reaches another instance is lost: the call times out and creates nothing', async () => {
    const proxy = await splitProxy(a.url, lone.url);
    const { client } = await connect(proxy.url, {
      elicit: async () => ({ action: 'accept', content: { confirm: true } }),
    });
    const result = (await client.callTool({
      name: 'create_push_campaign',
      arguments: campaignArgs('Lost answer'),
    })) as CallToolResult;
    expect(codeOf(result)).toBe('CONFIRMATION_DECLINED');
    expect(proxy.routed.answers).toBe(1);
    expect(await campaignsNamed('Lost answer')).toEqual([]);
  });

  it('never asks a client that did not declare elicitation: the lead-time rules apply instead', async () => {
    const plain = await connect(a.url);
    const result = (await plain.client.callTool({
      name: 'create_push_campaign',
      arguments: campaignArgs('Unasked'),
    })) as CallToolResult;
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    const body = result.structuredContent as { scheduled_at: string };
    expect(new Date(body.scheduled_at).getTime()).toBeGreaterThan(Date.now() + 14 * 60_000);
    expect(plain.serverMethods).not.toContain('elicitation/create');
    // the same call from a client that declared elicitation is asked
    const asking = await connect(a.url, { elicit: async () => ({ action: 'decline' }) });
    await asking.client.callTool({ name: 'create_push_campaign', arguments: campaignArgs('Asked') });
    await new Promise((r) => setImmediate(r));
    expect(asking.serverMethods).toContain('elicitation/create');
  });
});

describe('log messages at the level the session set', () => {
  const ask = (client: Client) =>
    client.callTool({ name: 'query_analytics', arguments: { query: 'SELECT count(*) AS n FROM events' } });

  it('sends nothing below warning after setLevel(warning), and the SQL after setLevel(debug), on any instance', async () => {
    const first = await connect(a.url);
    await first.client.setLoggingLevel('warning');
    const quiet = (await ask(first.client)) as CallToolResult;
    expect(quiet.isError).toBeFalsy();
    expect(first.logs).toEqual([]);

    await first.client.setLoggingLevel('debug');
    // a new request on the same session, served by the other instance, reads the level back
    const other = await connect(b.url, { sessionId: first.transport.sessionId });
    await ask(other.client);
    const sql = other.logs.find((l) => l.level === 'debug');
    expect(sql?.data).toMatchObject({ sql: expect.stringContaining('count(*)'), query_method: 'sql' });
    expect(other.logs.some((l) => l.level === 'info' && typeof l.data.query_time_ms === 'number')).toBe(true);
  });

  it('sends info but not the SQL to a client that never set a level', async () => {
    const fresh = await connect(a.url);
    await ask(fresh.client);
    expect(fresh.logs.map((l) => l.level)).toEqual(['info']);
  });
});
