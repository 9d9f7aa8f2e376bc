// Real calendar dates only: 2026-02-30 is a 400 wherever a date or date-time is accepted (event
// and website timestamps, metric and MCP query dates, admin fields), never silently 2 March.
// Leap days are real on leap years only; event times run from 1970 to one hour from now.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

const DATE = 'must be a real calendar date written YYYY-MM-DD (for example 2026-02-28; 2026-02-30 does not exist)';
const DATE_TIME =
  'must be a real date and time in ISO 8601 with a time zone (for example 2026-02-28T09:30:00Z; 2026-02-30 does not exist)';
const SITE = 'https://dates.example';

let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  await updateApp(server.db.knex, tenant.app.id, { website_url: SITE });
});
afterAll(() => server?.close());

const storedTime = async (eventId: string) =>
  (await server.db.knex('events').where({ app_id: tenant.app.id, id: eventId }).first()).created_at as Date;

describe('event timestamps', () => {
  it('refuses 30 February instead of storing 2 March', async () => {
    const { error, response } = await tenant.client.eventsTrack({
      body: { event_name: 'x', user_id: 'd-1', timestamp: '2026-02-30T10:00:00Z' },
    });
    expect(response.status).toBe(400);
    expect(error).toMatchObject({
      code: 'INVALID_REQUEST',
      details: { errors: [{ path: '/body/timestamp', message: DATE_TIME }] },
    });
  });

  it('refuses impossible months, days and hours, naming each bad event of a batch', async () => {
    const { error, response } = await tenant.client.eventsTrackBatch({
      body: {
        events: [
          { event_name: 'x', user_id: 'd-2', timestamp: '2026-01-15T10:00:00Z' },
          { event_name: 'x', user_id: 'd-2', timestamp: '2025-02-29T10:00:00Z' },
          { event_name: 'x', user_id: 'd-2', timestamp: '2026-04-31T10:00:00Z' },
          { event_name: 'x', user_id: 'd-2', timestamp: '2026-13-01T10:00:00Z' },
          { event_name: 'x', user_id: 'd-2', timestamp: '2026-01-01T24:00:00Z' },
        ],
      },
    });
    expect(response.status).toBe(400);
    expect(error?.details).toEqual({
      errors: [1, 2, 3, 4].map((i) => ({ path: `/body/events/${i}/timestamp`, message: DATE_TIME })),
    });
  });

  it('accepts 29 February of a leap year and stores that very instant', async () => {
    const { data, response } = await tenant.client.eventsTrack({
      body: { event_name: 'x', user_id: 'd-3', timestamp: '2024-02-29T23:30:00+01:00' },
    });
    expect(response.status).toBe(200);
    expect((await storedTime(data!.event_id)).toISOString()).toBe('2024-02-29T22:30:00.000Z');
  });

  it('refuses times before 1970 (they would fall outside every metric)', async () => {
    const { error, response } = await tenant.client.eventsTrack({
      body: { event_name: 'x', user_id: 'd-4', timestamp: '1969-12-31T23:59:59Z' },
    });
    expect(response.status).toBe(400);
    expect(error?.details).toEqual({
      errors: [
        { path: '/body/timestamp', message: 'is before 1970-01-01T00:00:00Z, the earliest event time accepted' },
      ],
    });
  });

  it('refuses impossible dates on the website endpoints too', async () => {
    const web = server.clientFor();
    const visit = await web.websiteLogVisit({
      body: { app_id: tenant.app.id, visitor_id: 'v-1', visit_url: `${SITE}/`, timestamp: '2026-02-30T08:00:00Z' },
      headers: { Origin: SITE },
    });
    expect(visit.response.status).toBe(400);
    expect(visit.error?.details).toEqual({ errors: [{ path: '/body/timestamp', message: DATE_TIME }] });

    const event = await web.websiteTrackEvent({
      body: { app_id: tenant.app.id, visitor_id: 'v-1', event_name: 'x', timestamp: '2026-06-31T08:00:00Z' },
      headers: { Origin: SITE },
    });
    expect(event.response.status).toBe(400);
    expect(event.error?.details).toEqual({ errors: [{ path: '/body/timestamp', message: DATE_TIME }] });
  });
});

describe('dates in query parameters', () => {
  it('refuses impossible start_date and end_date on metrics', async () => {
    const { error, response } = await tenant.client.analyticsMetrics({
      query: { app_id: tenant.app.id, metric: 'dau', start_date: '2026-02-30', end_date: '2026-09-31' },
    });
    expect(response.status).toBe(400);
    expect(error?.details).toEqual({
      errors: [
        { path: '/query/start_date', message: DATE },
        { path: '/query/end_date', message: DATE },
      ],
    });
  });

  it('accepts real dates, leap days included, and refuses dates outside 1970-2999', async () => {
    const ok = await tenant.client.analyticsMetrics({
      query: { app_id: tenant.app.id, metric: 'dau', start_date: '2024-02-28', end_date: '2024-03-01' },
    });
    expect(ok.response.status).toBe(200);
    expect(ok.data?.data.map((p) => p.date)).toEqual(['2024-02-28', '2024-02-29', '2024-03-01']);

    const far = await tenant.client.analyticsMetrics({
      query: { app_id: tenant.app.id, metric: 'dau', start_date: '1000-01-01', end_date: '9999-12-31' },
    });
    expect(far.response.status).toBe(400);
    expect(far.error?.details).toEqual({
      errors: [
        { path: '/query/start_date', message: 'must be between 1970-01-01 and 2999-12-31' },
        { path: '/query/end_date', message: 'must be between 1970-01-01 and 2999-12-31' },
      ],
    });
  });

  it('refuses impossible dates on the MCP GETs', async () => {
    const res = await fetch(`${server.url}/mcp/events?start_date=2026-02-30`, {
      headers: { 'X-MCP-API-Key': tenant.mcpKey },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      code: 'INVALID_REQUEST',
      details: { errors: [{ path: '/query/start_date', message: DATE }] },
    });
  });
});

describe('dates in admin bodies', () => {
  const admin = () => server.clientFor(TEST_ADMIN_TOKEN);

  it('refuses an impossible released_at and seed-demo end_date', async () => {
    const version = await admin().adminVersionsAdd({
      path: { app_id: tenant.app.id },
      body: { version: '1.0.0', released_at: '2026-02-30T00:00:00Z' },
    });
    expect(version.response.status).toBe(400);
    expect(version.error?.details).toEqual({ errors: [{ path: '/body/released_at', message: DATE_TIME }] });

    const seed = await admin().adminDemoSeed({
      path: { app_id: tenant.app.id },
      body: { users: 1, days: 1, end_date: '2023-02-29' },
    });
    expect(seed.response.status).toBe(400);
    expect(seed.error?.details).toEqual({ errors: [{ path: '/body/end_date', message: DATE }] });
  });
});
