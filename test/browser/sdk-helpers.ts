// What the browser SDK tests (sdk.test.ts, sdk-identity.test.ts) share: Chromium at /usr/bin/chromium
// (the tests skip without it, except in CI, where they fail), a test site on http://localhost:<port>
// loading the script from Tally on http://127.0.0.1:<port> (another origin, so CORS is real), an app
// that allows the site and one that does not, and helpers that open a page as a new visitor and
// wait for what lands in storage. Each file sets it up inside its describe with setUpBrowserSite;
// the state below is live bindings, set by the set-up.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

export const CHROMIUM = '/usr/bin/chromium';
/** Headless, and nothing that reaches out to the network on its own (this machine's network is closed). */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const available = fs.existsSync(CHROMIUM);
export const inCi = process.env.CI === 'true';
if (!available && !inCi) {
  console.warn(`Browser tests skipped: no Chromium at ${CHROMIUM} (install it with: apt-get install -y chromium).`);
}

export let server: TestServer;
let site: http.Server;
export let siteUrl: string;
export let context: BrowserContext;
export let appId: string;
export let appKey: string;
export let refusedAppId: string;
let profile: string;
export const formPosts: string[] = [];
let keys = 0;

function html(body: string, app: string, key: string): string {
  return `<!doctype html><html><head><title>Test page</title>
<script src="${server.url}/sdk/v1/service-web.js"></script>
<script>ServiceWeb.init({ appId: ${JSON.stringify(app)}, userIdStorageKey: ${JSON.stringify(key)}, debug: true });</script>
</head><body>${body}</body></html>`;
}

const BODIES: Record<string, (q: URLSearchParams) => string> = {
  '/form': (q) => `<form id="signup" method="post" action="/thanks?${q}">
    <input type="email" name="email"><input name="first_name"><button id="go">Sign up</button></form>`,
  '/thanks': () => '<p id="thanks">Thanks</p>',
};

function serveSite(req: http.IncomingMessage, res: http.ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://localhost');
  let posted = '';
  req.on('data', (chunk) => {
    posted += chunk;
  });
  req.on('end', () => {
    if (req.method === 'POST') formPosts.push(posted);
    const q = url.searchParams;
    const body = BODIES[url.pathname]?.(q) ?? `<button id="ok" onclick="this.textContent='clicked'">Click</button>`;
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(html(body, q.get('app') ?? '', q.get('key') ?? 'service_user_id'));
  });
}

/** Polls until `check` passes (the SDK sends in the background), failing after 10 s. */
export async function until<T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (check(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const db = () => server.db.knex;
export const visitsOf = (app: string, key: string) =>
  db()('visits').where({ app_id: app }).whereLike('visit_url', `%key=${key}%`).orderBy('created_at');
export const eventsNamed = (app: string, name: string) => db()('events').where({ app_id: app, event_name: name });

/** A fresh storage key per test, so each test starts as a new anonymous visitor. */
export async function open(pathname: string, app = appId): Promise<{ page: Page; key: string; url: string }> {
  const key = `k${++keys}`;
  const page = await context.newPage();
  if (process.env.SDK_DEBUG) page.on('console', (m) => console.log(key, m.text()));
  const url = `${siteUrl}${pathname}?app=${app}&key=${key}`;
  await page.goto(url);
  return { page, key, url };
}

/** Starts Tally, the site and Chromium before the describe's tests; stops them after. */
export function setUpBrowserSite(): void {
  beforeAll(async () => {
    if (!available)
      throw new Error(`CI=true and no Chromium at ${CHROMIUM}: install it with apt-get install -y chromium.`);
    server = await startTestServer({ SECRET_KEY: 'browser-test-secret-key-0123456789' });
    site = http.createServer(serveSite);
    await new Promise<void>((resolve) => site.listen(0, resolve));
    siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
    const allowed = await server.createTenant();
    await updateApp(db(), allowed.app.id, { website_url: siteUrl });
    appId = allowed.app.id;
    appKey = allowed.apiKey;
    const refused = await server.createTenant();
    await updateApp(db(), refused.app.id, { website_url: 'https://elsewhere.example' });
    refusedAppId = refused.app.id;
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
    });
  });
  afterAll(async () => {
    await context?.close();
    if (site) await new Promise((r) => site.close(r));
    await server?.close();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });
}
