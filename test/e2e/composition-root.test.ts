// One composition root (server/src/tally.ts) builds every wing once: two roots, even on one
// database, share no key cache, rate limiter, sandbox admission, lexicon cache, trigger-campaign
// cache or erasure hook; the language model is made once per root; the rate limiter counts in
// Redis exactly when the root's configuration names REDIS_URL; and a root leaves a database it
// was given open.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { authenticateRest, createKey } from '../../server/src/admin/keys.js';
import { type Config, loadConfig } from '../../server/src/config.js';
import { uuidv7 } from '../../server/src/ids.js';
import { appLexicon } from '../../server/src/language/service.js';
import { createLlm } from '../../server/src/llm/index.js';
import { createLogger } from '../../server/src/logger.js';
import type { Database } from '../../server/src/storage/db.js';
import { inTransaction } from '../../server/src/storage/handle.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { createTally, type Tally } from '../../server/src/tally.js';
import { openTestDatabase } from '../helpers/server.js';

vi.mock('../../server/src/llm/index.js', async (original) => {
  const actual = await original<typeof import('../../server/src/llm/index.js')>();
  return { ...actual, createLlm: vi.fn(actual.createLlm) };
});

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const logger = createLogger('silent');

function config(env: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATA_DIR: '/nonexistent-tally-root-test',
    RATE_LIMITS: JSON.stringify({ events: 1 }),
    ...env,
  });
}

let database: Database;
const roots: Tally[] = [];
async function root(env: Record<string, string> = {}): Promise<Tally> {
  const tally = await createTally(config(env), { logger, database });
  roots.push(tally);
  return tally;
}

beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  for (const tally of roots) await tally.close();
  await database?.close();
});

describe('two roots on one database', () => {
  it('keep their own key caches', async () => {
    const [a, b] = [await root(), await root()];
    const org = await insertOrganization(database.knex, { id: uuidv7(), name: 'Root org' });
    const app = await insertApp(database.knex, { id: uuidv7(), organization_id: org.id, name: 'Root app' });
    const key = await createKey(database.knex, app, { kind: 'rest' });
    expect(await authenticateRest(a.context, key.secret)).toMatchObject({ appId: app.id });
    expect(a.context.keys.size).toBe(1);
    expect(b.context.keys.size).toBe(0);
    expect(a.context.keys).not.toBe(b.context.keys);
  });

  it('keep their own rate limiters', async () => {
    const [a, b] = [await root(), await root()];
    expect(await a.rateLimiter.consume('events', 'same-key')).toMatchObject({ allowed: true });
    expect(await a.rateLimiter.consume('events', 'same-key')).toMatchObject({ allowed: false });
    expect(await b.rateLimiter.consume('events', 'same-key')).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('keep their own sandbox executor and admission: a cool-down in one is not felt by the other', async () => {
    const [a, b] = [await root(), await root()];
    expect(a.sandbox.executor).not.toBe(b.sandbox.executor);
    expect(a.sandbox.admission).not.toBe(b.sandbox.admission);
    const now = () => Date.now();
    a.sandbox.admission.capHit('org-1', now());
    const query = { key: 'key-1', organization: 'org-1', timeoutMs: 1_000, now };
    await expect(a.sandbox.admission.run(query, async () => 'ran')).rejects.toMatchObject({
      status: 429,
      details: { reason: 'cooldown' },
    });
    await expect(b.sandbox.admission.run(query, async () => 'ran')).resolves.toBe('ran');
  });

  it('keep their own lexicon and trigger-campaign caches', async () => {
    const [a, b] = [await root(), await root()];
    const org = await insertOrganization(database.knex, { id: uuidv7(), name: 'Lexicon org' });
    const app = await insertApp(database.knex, { id: uuidv7(), organization_id: org.id, name: 'Lexicon app' });
    await appLexicon(a.context, app.id);
    expect(a.context.lexicons.size).toBe(1);
    expect(b.context.lexicons.size).toBe(0);
    expect(a.context.triggerCampaigns).not.toBe(b.context.triggerCampaigns);
  });

  it('keep their own erasure hooks', async () => {
    const [a, b] = [await root(), await root()];
    const unregister = a.context.erasureHooks.register('test-only-in-a', async () => 5);
    try {
      expect(a.context.erasureHooks.names).toEqual(['campaign-sends', 'test-only-in-a']);
      expect(b.context.erasureHooks.names).toEqual(['campaign-sends']);
      const appId = uuidv7();
      const userId = uuidv7();
      const counted = await inTransaction(database.knex, async (tx) => [
        await a.context.erasureHooks.run(tx, appId, userId),
        await b.context.erasureHooks.run(tx, appId, userId),
      ]);
      expect(counted).toEqual([5, 0]);
    } finally {
      unregister();
    }
    expect(a.context.erasureHooks.names).toEqual(['campaign-sends']);
  });
});

describe('each root', () => {
  it('makes its language model once, and HTTP, MCP and the jobs share its one service context', async () => {
    const made = vi.mocked(createLlm);
    made.mockClear();
    const env = { LLM_BASE_URL: 'http://127.0.0.1:1/v1', LLM_API_KEY: 'test' };
    const [a, b] = [await root(env), await root(env)];
    expect(made).toHaveBeenCalledTimes(2);
    expect(made.mock.calls.map(([c]) => c)).toEqual([a.config, b.config]);
    expect(a.context.llm).not.toBeNull();
    expect(a.context.llm).not.toBe(b.context.llm);
  });

  it('counts rate limits in Redis when its configuration names REDIS_URL, in memory otherwise', async () => {
    expect((await root()).rateLimiter.kind).toBe('memory');
    const [a, b] = [await root({ REDIS_URL }), await root({ REDIS_URL })];
    expect(a.rateLimiter.kind).toBe('redis');
    const key = `root-test-${randomBytes(6).toString('hex')}`;
    expect(await a.rateLimiter.consume('events', key)).toMatchObject({ allowed: true });
    // the second root reads the same counter: the store is Redis, not its own memory
    expect(await b.rateLimiter.consume('events', key)).toMatchObject({ allowed: false });
    expect(a.rateLimiter.failures + b.rateLimiter.failures).toBe(0);
  });

  it('leaves a database it was given open when it closes', async () => {
    const tally = await createTally(config(), { logger, database });
    await tally.close();
    expect(await database.knex.raw('select 1 as one')).toBeDefined();
  });
});
