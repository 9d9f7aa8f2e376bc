// GET /metrics after real traffic: events (one REST batch refused by its rate limit), a unknown
// path, SQL through the sandbox (one run, one refused), an MCP session, a push through a local
// webhook receiver and a job run; the scrape is parsed as Prometheus text and the series these
// caused are checked by value. Then the token rules (401 in the envelope, the admin token and
// METRICS_TOKEN both read it) and the alert rules of docs/alerts.yml against the real names.
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENFORCE_RETENTION } from '../../server/src/jobs/index.js';
import { alertRules, metricNamesIn, namesExposed } from '../helpers/alerts.js';
import { startFakeWebhook } from '../helpers/fake-push.js';
import { connectMcp } from '../helpers/mcp-client.js';
import { type Scrape, scrape, series, value } from '../helpers/metrics.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

const METRICS_TOKEN = 'metrics-token-for-the-scraper-0123';
const SECRET_KEY = 'metrics-test-secret-key-0123456789';
const HOOK_SECRET = 'whsec-metrics-0a1b2c3d4e5f';

let server: TestServer;
let tenant: Tenant;
let families: Scrape;

async function waitForJob(name: string, id: string): Promise<string | null> {
  for (let i = 0; i < 300; i++) {
    const state = await server.jobs.state(name, id);
    if (state === 'completed' || state === 'failed') return state;
    await new Promise((r) => setTimeout(r, 100));
  }
  return null;
}

/** Events (3 requests, 5 events), a batch over its limit, a 404, two SQL queries, MCP, a push, a job. */
async function traffic(): Promise<void> {
  for (const user of ['m-1', 'm-2', 'm-3']) {
    const { response } = await tenant.client.eventsTrack({ body: { event_name: 'metric_seen', user_id: user } });
    expect(response.status).toBe(200);
  }
  const batch = { events: [1, 2].map((i) => ({ event_name: 'metric_batch', user_id: `b-${i}` })) };
  expect((await tenant.client.eventsTrackBatch({ body: batch })).response.status).toBe(200);
  expect((await tenant.client.eventsTrackBatch({ body: batch })).response.status).toBe(429);
  expect((await fetch(`${server.url}/no/such/path/u-42`)).status).toBe(404);

  const sql = (query: string) => tenant.client.analyticsQuery({ body: { app_id: tenant.app.id, query } });
  expect((await sql('SELECT count(*) AS n FROM events')).response.status).toBe(200);
  expect((await sql('DELETE FROM events')).error).toMatchObject({ code: 'QUERY_REJECTED' });

  const mcp = await connectMcp(server.url, tenant.mcpKey);
  await mcp.client.listTools();
  await mcp.client.close();

  const hook = await startFakeWebhook({ secret: HOOK_SECRET });
  try {
    const admin = createTallyClient({ baseUrl: server.url, adminToken: TEST_ADMIN_TOKEN });
    const configured = await admin.adminPushConfigure({
      path: { app_id: tenant.app.id },
      body: { provider: 'webhook', webhook_url: `${hook.baseUrl}/tally`, webhook_secret: HOOK_SECRET },
    });
    expect(configured.error).toBeUndefined();
    const sent = await tenant.client.pushSend({ body: { user_id: 'm-1', title: 'Hi', message: 'There' } });
    expect(sent.error).toBeUndefined();
    expect(hook.requests).toHaveLength(1);
  } finally {
    await hook.close();
  }

  // A job that changes nothing in the database other test files share: retention as of the year
  // 2000 finds nothing old enough to remove (a purge of dedup rows would take other files' rows).
  const run = await server.jobs.runNow(ENFORCE_RETENTION, { now: '2000-01-01T00:00:00.000Z' });
  expect(await waitForJob(ENFORCE_RETENTION, run)).toBe('completed');
}

beforeAll(async () => {
  server = await startTestServer(
    {
      METRICS_TOKEN,
      SECRET_KEY,
      PUSH_ENDPOINT_ALLOWLIST: '127.0.0.1',
      RATE_LIMITS: JSON.stringify({ batch: 1, other: 2 }),
    },
    // A queue of its own: the job run is worked by this server, whose metrics are read.
    { jobSchema: 'pgboss_metrics_test', jobs: (name) => name === ENFORCE_RETENTION },
  );
  tenant = await server.createTenant();
  await traffic();
  families = await scrape(server.url, METRICS_TOKEN);
});
afterAll(() => server?.close());

describe('GET /metrics', () => {
  it('counts HTTP requests by operation id and status, with their latency', () => {
    const requests = 'tally_http_requests_total';
    expect(value(families, requests, { operation: 'Events_track', status: '200' })).toBe(3);
    expect(value(families, requests, { operation: 'Events_trackBatch', status: '200' })).toBe(1);
    expect(value(families, requests, { operation: 'Events_trackBatch', status: '429' })).toBe(1);
    expect(value(families, requests, { operation: 'Analytics_query', status: '200' })).toBe(1);
    expect(value(families, requests, { operation: 'Analytics_query', status: '400' })).toBe(1);
    expect(value(families, requests, { operation: 'unmatched', status: '404' })).toBe(1);
    expect(value(families, requests, { operation: 'mcp', status: '200' })).toBeGreaterThanOrEqual(2);
    // no raw path ever becomes a label
    const labels = series(families, requests).map((s) => s.labels!.operation!);
    expect(labels.filter((l) => l.includes('/'))).toEqual([]);
    const latency = { operation: 'Events_track' };
    expect(value(families, 'tally_http_request_duration_seconds_count', latency)).toBe(3);
    expect(value(families, 'tally_http_request_duration_seconds_sum', latency)).toBeGreaterThan(0);
    expect(value(families, 'tally_http_request_duration_seconds_bucket', { ...latency, le: '+Inf' })).toBe(3);
  });

  it('counts events written, their group commits and commit latency', () => {
    expect(value(families, 'tally_ingest_events_total', { outcome: 'written' })).toBe(5);
    // every event went through some group: the groups' sizes add up to the events
    expect(value(families, 'tally_ingest_batch_events_sum')).toBe(5);
    const groups = value(families, 'tally_ingest_batch_events_count');
    expect(groups).toBeGreaterThanOrEqual(2);
    expect(value(families, 'tally_ingest_commit_duration_seconds_count')).toBe(groups);
    expect(value(families, 'tally_ingest_queue_events')).toBe(0);
  });

  it('counts rate-limit refusals by class', () => {
    expect(value(families, 'tally_rate_limit_refusals_total', { class: 'batch' })).toBe(1);
    expect(value(families, 'tally_rate_limit_refusals_total', { class: 'events' })).toBe(0);
  });

  it('counts sandbox queries and refusals by organization', () => {
    const organization_id = tenant.organization.id;
    expect(value(families, 'tally_sandbox_queries_total', { organization_id, source: 'caller' })).toBe(2);
    expect(value(families, 'tally_sandbox_refusals_total', { organization_id, reason: 'rejected' })).toBe(1);
    expect(value(families, 'tally_sandbox_time_cap_hits_total', { organization_id })).toBe(0);
  });

  it('counts MCP sessions, push sends and job outcomes, and reads queue depth and pools at scrape time', () => {
    expect(value(families, 'tally_mcp_sessions_created_total')).toBe(1);
    expect(value(families, 'tally_mcp_sessions_open')).toBeGreaterThanOrEqual(1);
    expect(value(families, 'tally_push_sends_total', { provider: 'webhook', outcome: 'delivered' })).toBe(1);
    expect(value(families, 'tally_push_sends_total', { provider: 'webhook', outcome: 'failed' })).toBe(0);
    expect(value(families, 'tally_jobs_total', { job: ENFORCE_RETENTION, outcome: 'completed' })).toBe(1);
    expect(series(families, 'tally_job_queue_depth', { queue: ENFORCE_RETENTION })).toHaveLength(1);
    const used = value(families, 'tally_db_pool_connections', { pool: 'main', state: 'used' });
    const free = value(families, 'tally_db_pool_connections', { pool: 'main', state: 'free' });
    expect(used + free).toBeGreaterThanOrEqual(1);
    expect(series(families, 'tally_db_pool_pending_acquires', { pool: 'main' })).toHaveLength(1);
    expect(value(families, 'tally_metrics_source_errors_total', { source: 'job_queue' })).toBe(0);
    // prom-client's process metrics, on this root's registry
    expect(series(families, 'process_cpu_user_seconds_total')).toHaveLength(1);
  });

  it('wants METRICS_TOKEN or the admin token, and is outside the rate limits', async () => {
    const missing = await fetch(`${server.url}/metrics`);
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ success: false, code: 'MISSING_AUTH' });
    const wrong = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${'x'.repeat(32)}` } });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ success: false, code: 'INVALID_API_KEY' });
    const mcpKey = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    expect(mcpKey.status).toBe(401);
    // `other` allows 2 requests a minute; scrapes are never limited
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    }
    const again = await scrape(server.url, METRICS_TOKEN);
    expect(value(again, 'tally_http_requests_total', { operation: 'ops', status: '401' })).toBe(3);
  });

  it('alerts only on metrics the server exposes (docs/alerts.yml)', () => {
    const exposed = namesExposed(families);
    const rules = alertRules();
    expect(rules.length).toBeGreaterThanOrEqual(5);
    for (const rule of rules) {
      const names = metricNamesIn(rule.expr);
      expect(names.length, `${rule.alert} uses no metric`).toBeGreaterThan(0);
      for (const name of names) expect(exposed, `${rule.alert} uses ${name}`).toContain(name);
    }
  });
});
