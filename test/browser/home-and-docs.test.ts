// What a person sees at the server's root and at /docs, in a real browser that may reach nothing
// but this server: the home page points to the reference, the contract and the guides; the
// reference renders every operation with no request to any other host and no broken image.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { available, CHROMIUM, CHROMIUM_ARGS, inCi } from './sdk-helpers.js';

describe.skipIf(!available && !inCi)('the home page and the API reference in a browser', () => {
  let server: TestServer;
  let browser: Browser;
  let profile: string;
  beforeAll(async () => {
    server = await startTestServer();
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-chromium-'));
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
    });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });

  /** Opens `pathname` with every request to another host blocked and recorded. */
  async function open(pathname: string) {
    const page = await browser.newPage();
    const outside: string[] = [];
    const own = new URL(server.url).host;
    await page.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.protocol === 'data:' || url.protocol === 'blob:' || url.host === own) return route.continue();
      outside.push(url.href);
      return route.abort();
    });
    const blocked: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) blocked.push(m.text());
    });
    const response = await page.goto(`${server.url}${pathname}`, { waitUntil: 'load' });
    return { page, response, outside, blocked };
  }

  it('/ links to the reference, the contract and the guides, and each link answers', async () => {
    const { page, response, outside } = await open('/');
    expect(response?.status()).toBe(200);
    const links = await page.$$eval('a', (as) => as.map((a) => a.getAttribute('href') ?? ''));
    expect(links).toEqual(expect.arrayContaining(['/docs', '/openapi.json', '/openapi.yaml', '/guides/analytics.md']));
    for (const href of links) {
      const res = await fetch(`${server.url}${href}`);
      expect(res.status, href).toBe(200);
    }
    expect(outside).toEqual([]);
    await page.close();
  });

  it('/docs renders the operations without reaching any other host and shows no broken image', async () => {
    const { page, response, outside } = await open('/docs');
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
    await page.waitForSelector('text=Tally API', { timeout: 30_000 });
    await page.getByText('Events', { exact: true }).first().click();
    await page.waitForSelector('text=Track one event', { timeout: 10_000 });
    const broken = await page.$$eval('img', (imgs) =>
      imgs.filter((i) => i.complete && i.naturalWidth === 0 && i.getBoundingClientRect().width > 0).map((i) => i.src),
    );
    expect(broken).toEqual([]);
    expect(outside).toEqual([]);
    await page.close();
  });

  it("/docs shows an operation's request and response examples, error examples included, from this server alone", async () => {
    const { page, outside } = await open('/docs');
    await page.waitForSelector('text=Tally API', { timeout: 20_000 });
    await page.getByText('Events', { exact: true }).first().click();
    await page.getByText('Track a batch of events').first().click();
    // The reference gives each operation a section named by its tag and operation id.
    const operation = page.locator('[data-section-id="/events/events_trackbatch"]');
    await operation.getByText('Track a batch of events').first().waitFor({ timeout: 10_000 });
    const samples = operation.locator('[data-testid="right-panel"]');
    // The success example (spec/events/examples.tsp) in the response samples...
    await samples.getByText('"2 events recorded."').first().waitFor({ timeout: 10_000 });
    // ...and, once the 413 answer is chosen, its example.
    await operation.locator('[role=tab]', { hasText: /^413$/ }).first().click({ timeout: 10_000 });
    await samples.getByText('"PAYLOAD_TOO_LARGE"').first().waitFor({ timeout: 10_000 });
    expect(outside).toEqual([]);
    await page.close();
  }, 60_000);

  it('a guide is plain text, and a name outside the guides is 404 in the error envelope', async () => {
    const guide = await fetch(`${server.url}/guides/analytics.md`);
    expect(guide.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await guide.text()).toMatch(/^# /);
    for (const name of ['..%2Fpackage.json', '%2e%2e%2fREADME.md', 'nope.md', 'analytics.md%00']) {
      const res = await fetch(`${server.url}/guides/${name}`);
      expect(res.status, name).toBe(404);
      expect(await res.json()).toMatchObject({ success: false, code: 'NOT_FOUND' });
    }
  });

  it('/ answers JSON to a client that asks for JSON', async () => {
    const res = await fetch(`${server.url}/`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ name: 'Tally', reference: '/docs', contract: { json: '/openapi.json' } });
  });
});
