// Runs every phrasing of test/fixtures/audience-criteria.json through POST /v1/audiences on the
// fixture's users and events: understood criteria must select exactly the listed members (checked
// through audienceMembers and user_count), the others must be refused with examples.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audienceMembers } from '../../server/src/services/audiences.js';
import { audienceFixture, loadUsers, serviceContext } from '../fixtures/audience-data.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  await loadUsers(tenant.client, server.db.knex, tenant.app.id, audienceFixture.users);
});
afterAll(() => server?.close());

const understood = audienceFixture.cases.filter((c) => !c.refused);
const refused = audienceFixture.cases.filter((c) => c.refused);

it('has 30 phrasings, 10 of them to refuse', () => {
  expect(audienceFixture.cases).toHaveLength(30);
  expect(refused).toHaveLength(10);
});

describe('understood criteria select exactly their members', () => {
  it.each(understood.map((c) => [c.criteria, c.members!] as const))('%s', async (criteria, members) => {
    const { data, error } = await tenant.client.audiencesCreate({
      body: { app_id: tenant.app.id, name: criteria.slice(0, 60), criteria },
    });
    expect(error).toBeUndefined();
    expect(data).toMatchObject({ success: true, query_method: 'rules', confidence: 1, user_count: members.length });
    const page = await audienceMembers(serviceContext(server), tenant.app.id, data!.audience_id, {
      limit: 100,
      offset: 0,
    });
    expect(page.users.map((u) => u.user_id).sort()).toEqual([...members].sort());
    expect(page.total).toBe(members.length);
  });
});

describe('criteria the engine does not understand are refused with guidance', () => {
  it.each(refused.map((c) => [c.criteria] as const))('%s', async (criteria) => {
    const { error, response } = await tenant.client.audiencesCreate({
      body: { app_id: tenant.app.id, name: 'refused', criteria },
    });
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ success: false, code: 'QUERY_NOT_UNDERSTOOD' });
    const details = error!.details as { examples: string[]; reason: string };
    expect(details.examples.length).toBeGreaterThan(3);
    expect(details.reason).toEqual(expect.any(String));
    expect(error!.message).toContain(criteria);
  });
});
