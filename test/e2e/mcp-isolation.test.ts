// Another organization's data is never reachable through an MCP GET: every GET of the contract is
// walked with the other organization's ids in every slot that takes one (apps, users, event
// filters, audiences, campaigns, segments); each answers 404 (or 501 while its operation is not
// built), and no answer, including the ones that succeed on the caller's own app, carries anything
// of the other organization. A new MCP GET in the contract fails this test until it is walked too.
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listOperations, loadContract } from '../../server/src/contract.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let caller: Tenant;
let other: Tenant;
let otherAudience: string;
let otherVersion: string;

/** Strings that exist only in the other organization. */
const SECRETS = ['other-secret-user', 'other_secret_event', 'Other secret audience', 'other-alias', 'v9.9.9-other'];

beforeAll(async () => {
  server = await startTestServer();
  caller = await server.createTenant();
  other = await server.createTenant();
  await caller.client.eventsTrackBatch({
    body: { events: [{ user_id: 'mine', event_name: 'open', timestamp: '2026-03-02T10:00:00Z' }] },
  });
  await other.client.eventsTrackBatch({
    body: {
      events: [
        { user_id: 'other-secret-user', event_name: 'other_secret_event', timestamp: '2026-03-02T10:00:00Z' },
        { user_id: 'other-secret-user', event_name: 'open', timestamp: '2026-03-03T10:00:00Z' },
      ],
    },
  });
  await other.client.usersCreateAlias({ body: { user_id: 'other-secret-user', alias_id: 'other-alias' } });
  const audience = await other.client.audiencesCreate({
    body: { app_id: other.app.id, name: 'Other secret audience', criteria: 'users who did other_secret_event' },
  });
  otherAudience = audience.data!.audience_id;
  const admin = createTallyClient({ baseUrl: server.url, adminToken: TEST_ADMIN_TOKEN });
  const version = await admin.adminVersionsAdd({ path: { app_id: other.app.id }, body: { version: 'v9.9.9-other' } });
  expect(version.error).toBeUndefined();
  otherVersion = version.data!.id;
});
afterAll(() => server?.close());

const PERIOD = 'start_date=2026-03-01&end_date=2026-03-31';

/** Requests per operation: [path and query, statuses allowed]. Ids of the other organization everywhere. */
function walk(): Record<string, [string, number[]][]> {
  const a = other.app.id;
  const mine = caller.app.id;
  const notFound = [404];
  return {
    Mcp_info: [['/mcp', [200]]],
    Mcp_auth: [['/mcp/auth', [200]]],
    Mcp_docs: [['/mcp/docs', [200, 501]]],
    Mcp_resources: [['/mcp/resources', [200]]],
    Mcp_getApp: [
      [`/mcp/resources/apps/${a}`, notFound],
      [`/mcp/resources/apps/${otherVersion}`, notFound],
    ],
    Mcp_appVersions: [[`/mcp/resources/apps/${a}/versions`, notFound]],
    Mcp_events: [
      [`/mcp/events?app_id=${a}`, notFound],
      [`/mcp/events?app_id=${a}&user_id=other-secret-user`, notFound],
      [`/mcp/events?app_id=${mine}&user_id=other-secret-user`, notFound],
      [`/mcp/events?app_id=${mine}&user_id=other-alias`, notFound],
      [`/mcp/events?user_id=other-secret-user`, notFound],
      [`/mcp/events?app_id=${mine}&event_name=other_secret_event`, [200]],
      [`/mcp/events?app_id=${mine}&event_name=open&${PERIOD}`, [200]],
    ],
    Mcp_getUser: [
      ['/mcp/users/other-secret-user', notFound],
      ['/mcp/users/other-alias', notFound],
      [`/mcp/users/other-secret-user?app_id=${a}`, notFound],
      [`/mcp/users/other-secret-user?app_id=${mine}`, notFound],
      [`/mcp/users/${encodeURIComponent(other.app.id)}`, notFound],
    ],
    Mcp_listAudiences: [[`/mcp/resources/audiences?app_id=${a}`, notFound]],
    Mcp_getAudience: [[`/mcp/resources/audiences/${otherAudience}`, notFound]],
    Mcp_listCampaigns: [[`/mcp/resources/campaigns?app_id=${a}`, notFound]],
    Mcp_getCampaign: [[`/mcp/resources/campaigns/${otherAudience}`, [404, 501]]],
    Mcp_engagement: [
      [`/mcp/analytics/engagement?app_id=${a}`, notFound],
      [`/mcp/analytics/engagement?app_id=${mine}&segment=${otherAudience}`, notFound],
      [`/mcp/analytics/engagement?app_id=${mine}&segment=${encodeURIComponent('Other secret audience')}`, notFound],
      [`/mcp/analytics/engagement?app_id=${mine}&${PERIOD}`, [200]],
    ],
    Mcp_eventAnalytics: [
      [`/mcp/analytics/events/other_secret_event?app_id=${a}`, notFound],
      [`/mcp/analytics/events/other_secret_event?app_id=${mine}&${PERIOD}`, [200]],
      [`/mcp/analytics/events/open?app_id=${mine}&${PERIOD}`, [200]],
    ],
    Mcp_funnels: [
      [`/mcp/analytics/funnels?app_id=${a}&events=open,other_secret_event`, notFound],
      [`/mcp/analytics/funnels?app_id=${mine}&events=other_secret_event,open&${PERIOD}`, [200]],
    ],
  };
}

describe('another organization', () => {
  it('is never reachable through any MCP GET', async () => {
    const { doc } = loadContract();
    const gets = listOperations(doc)
      .filter((op) => op.method === 'GET' && op.path.startsWith('/mcp'))
      .map((op) => op.operationId)
      .sort();
    const requests = walk();
    expect(Object.keys(requests).sort()).toEqual(gets);
    for (const [operation, calls] of Object.entries(requests)) {
      for (const [url, allowed] of calls) {
        const res = await fetch(`${server.url}${url}`, { headers: { 'x-mcp-api-key': caller.mcpKey } });
        const text = await res.text();
        expect(allowed, `${operation} ${url} -> ${res.status} ${text}`).toContain(res.status);
        if (res.status === 404) expect(JSON.parse(text)).toMatchObject({ success: false, code: 'NOT_FOUND' });
        for (const secret of [...SECRETS, other.app.id, otherAudience, other.organization.id]) {
          // An answer may repeat what was asked for (a 404 names it, event analytics echo the name).
          if (url.includes(encodeURIComponent(secret))) continue;
          expect(text, `${operation} ${url} leaks ${secret}`).not.toContain(secret);
        }
      }
    }
  });

  it('and what succeeds on the caller own app counts only its own data', async () => {
    const get = async (url: string) =>
      (await fetch(`${server.url}${url}`, { headers: { 'x-mcp-api-key': caller.mcpKey } })).json();
    const mine = caller.app.id;
    expect((await get(`/mcp/events?app_id=${mine}&event_name=open`)).pagination.total).toBe(1);
    expect((await get(`/mcp/analytics/events/open?app_id=${mine}&${PERIOD}`)).total_events).toBe(1);
    expect((await get(`/mcp/analytics/events/other_secret_event?app_id=${mine}&${PERIOD}`)).total_events).toBe(0);
    const funnel = await get(`/mcp/analytics/funnels?app_id=${mine}&events=other_secret_event,open&${PERIOD}`);
    expect(funnel.steps.map((s: { users: number }) => s.users)).toEqual([0, 0]);
    const engagement = await get(`/mcp/analytics/engagement?app_id=${mine}&${PERIOD}`);
    expect(engagement.metrics.wau + engagement.metrics.mau).toBeLessThanOrEqual(2);
    expect(engagement.segments).toEqual([]);
    const resources = await get('/mcp/resources');
    expect(resources.resources.apps.map((a: { id: string }) => a.id)).toEqual([mine]);
    expect(resources.resources.audiences).toEqual([]);
  });
});
