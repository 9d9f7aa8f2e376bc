// What campaigns.test.ts and campaigns-triggers.test.ts share: the fake language model, the server
// with campaign workers on a clock the test moves (one per file, set up by setUpCampaignServer), and
// a tenant per test with a WonderPush of its own. The bindings below are live: `c` and `wp` are
// set by the set-up and by tenant(), and the test files read them as they are at that moment.
import { afterAll, beforeAll } from 'vitest';
import { addUsers, type Clocked, startClockedServer, useWonderPush, wonderPush } from '../helpers/campaigns.js';
import { type FakeOpenAi, startFakeOpenAi } from '../helpers/fake-openai.js';
import { openOwnDatabase } from '../helpers/own-database.js';

type Fake = Awaited<ReturnType<typeof wonderPush>>;
export let c: Clocked;
export let wp: Fake; // the provider of the tenant under test (one per tenant: other tenants' campaigns run too)
const fakes: Fake[] = [];
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

let llm: FakeOpenAi;
/** Text requests (push text) the language model received. */
export const textRequests = () => llm.requests.filter((r) => !r.response_format);
/** Prompts containing a key get a 500 from the model, that many times (Infinity: always). */
export const llmFailures = new Map<string, number>();

/**
 * Starts the fake language model and the clocked server before the file's tests, and stops them
 * after. `ownDatabase` (a name prefix) puts the server on a database of its own: on PostgreSQL two
 * servers with campaign workers on one database would run each other's campaigns and trigger
 * occurrences on their own clocks (the embedded database is a copy per file anyway).
 */
export function setUpCampaignServer(options: { ownDatabase?: string } = {}): void {
  let own: Awaited<ReturnType<typeof openOwnDatabase>> | undefined;
  beforeAll(async () => {
    // The language model: picks `checkout_completed` for "the deal is sealed" (no word of it names an event), nothing otherwise;
    // writes every push text as "Big sale today".
    llm = await startFakeOpenAi((req) => {
      if (req.response_format?.json_schema?.name === 'trigger_event') {
        const asked = req.messages.at(-1)!.content;
        return JSON.stringify({ event_name: asked.includes('the deal is sealed') ? 'checkout_completed' : null });
      }
      const prompt = req.messages.at(-1)!.content;
      for (const [key, left] of llmFailures) {
        if (!prompt.includes(key) || left <= 0) continue;
        llmFailures.set(key, left - 1);
        return { status: 500, body: { error: { message: 'The server had an error', type: 'server_error' } } };
      }
      return 'Big sale today';
    });
    if (options.ownDatabase) own = await openOwnDatabase(options.ownDatabase);
    c = await startClockedServer(
      '2026-03-07T12:00:00Z',
      { LLM_BASE_URL: llm.baseUrl, LLM_API_KEY: 'test' },
      { database: own?.database },
    );
  });
  afterAll(async () => {
    await c?.server.close();
    await own?.close();
    await llm?.close();
    for (const f of fakes) await f.close();
  });
}

/** A tenant in `timezone` with these users, pushing to a WonderPush of its own (it becomes `wp`). */
export async function tenant(users: { id: string; properties?: Record<string, unknown> }[], timezone = 'UTC') {
  const t = await c.server.createTenant();
  await c.admin.adminOrganizationsUpdate({ path: { organization_id: t.organization.id }, body: { timezone } });
  wp = await wonderPush();
  fakes.push(wp);
  await useWonderPush(c, t, wp.baseUrl);
  await addUsers(t, users);
  return t;
}

/** Pushes to this tenant's users since `from` (index in wp.calls). */
export const reachedSince = (from: number) => wp.calls.slice(from).flatMap((x) => x.users);
