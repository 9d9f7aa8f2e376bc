// The browser SDK as an integrator installs it: `npm pack` of sdk-web (prepack builds the ES module
// and its types), `npm install` of the tarball into a scratch project outside the workspace, an app
// written in strict TypeScript that imports `@tally/web` (type-checked against the installed
// declarations, bundled with esbuild through the package's `exports`), served on its own origin and
// run in Debian's Chromium; the event it sends is stored. Skips without /usr/bin/chromium, except
// in CI, where it fails.
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';
import { available, CHROMIUM, CHROMIUM_ARGS, inCi, until } from './sdk-helpers.js';

const root = path.resolve(import.meta.dirname, '../..');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-web-pack-'));
const run = promisify(execFile);
let server: TestServer;
let tenant: Tenant;
let site: http.Server | undefined;
let context: BrowserContext | undefined;

const APP = `import { init, trackEvent, type WebsiteEventRequest } from '@tally/web';

declare global {
  interface Window { tally: { appId: string; apiBase: string } }
}
const { appId, apiBase } = window.tally;
init({ appId, apiBase, autoEvents: false, autoHook: false });
const properties: WebsiteEventRequest['properties'] = { plan: 'pro', from: 'npm' };
trackEvent('package_installed', properties);
export function neverCalled() {
  // @ts-expect-error trackEvent takes a name first
  trackEvent({ event_name: 'wrong' });
}
document.body.dataset.sent = 'yes';
`;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
});
afterAll(async () => {
  await context?.close();
  if (site) await new Promise((r) => site!.close(r));
  await server?.close();
  fs.rmSync(work, { recursive: true, force: true });
});

/** Packs sdk-web and installs the tarball into a new project; returns the project's folder. */
async function installPackage(): Promise<string> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], {
    cwd: path.join(root, 'sdk-web'),
  });
  // prepack's own output comes first: the JSON report is the rest.
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('\n[') + 1)) as {
    filename: string;
    files: { path: string }[];
  }[];
  const files = packed!.files.map((f) => f.path);
  expect(files).toEqual(
    expect.arrayContaining([
      'dist/npm/index.js',
      'dist/npm/index.d.ts',
      'dist/service-web.js',
      'README.md',
      'CHANGELOG.md',
    ]),
  );
  expect(files.filter((f) => f.startsWith('src/') || f.startsWith('test/'))).toEqual([]);
  const app = path.join(work, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(work, packed!.filename)], {
    cwd: app,
  });
  return app;
}

describe.skipIf(!available && !inCi)('the packed @tally/web', () => {
  it('installs from its tarball, type-checks in strict TypeScript, and sends an event from a page', async () => {
    const app = await installPackage();
    fs.writeFileSync(path.join(app, 'app.ts'), APP);
    fs.writeFileSync(
      path.join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'esnext',
          moduleResolution: 'bundler',
          lib: ['ES2022', 'DOM'],
          target: 'ES2022',
          types: [],
        },
        files: ['app.ts'],
      }),
    );
    const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
    execFileSync(process.execPath, [tsc, '-p', app], { cwd: app, stdio: 'inherit' });
    await build({
      entryPoints: [path.join(app, 'app.ts')],
      bundle: true,
      format: 'esm',
      outfile: path.join(app, 'app.js'),
      absWorkingDir: app,
      logLevel: 'warning',
    });

    const bundle = fs.readFileSync(path.join(app, 'app.js'), 'utf8');
    site = http.createServer((req, res) => {
      if (req.url === '/app.js') {
        res.writeHead(200, { 'Content-Type': 'text/javascript' });
        res.end(bundle);
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      const tally = JSON.stringify({ appId: tenant.app.id, apiBase: server.url });
      res.end(
        `<!doctype html><title>Shop</title><body><script>window.tally = ${tally}</script><script type="module" src="/app.js"></script></body>`,
      );
    });
    await new Promise<void>((resolve) => site!.listen(0, resolve));
    const siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
    await updateApp(server.db.knex, tenant.app.id, { website_url: siteUrl });

    const profile = fs.mkdtempSync(path.join(work, 'chromium-'));
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    const page = await context.newPage();
    if (process.env.SDK_DEBUG) page.on('console', (m) => console.log(m.text()));
    await page.goto(`${siteUrl}/`);
    await page.waitForSelector('body[data-sent="yes"]', { state: 'attached' });
    const events = await until(
      () => server.db.knex('events').where({ app_id: tenant.app.id, event_name: 'package_installed' }),
      (rows) => rows.length > 0,
    );
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ source: 'website', properties: { plan: 'pro', from: 'npm' } });
  }, 120_000);
});
