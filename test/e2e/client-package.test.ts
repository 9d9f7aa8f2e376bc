// @tally/client as an integrator installs it: the packed tarball holds ESM and CommonJS builds
// with types, both module systems load it and reach a running server, its retries wait out a 429's
// Retry-After, its errors carry typed codes, and strict TypeScript compiles against its types.
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, type ScriptedServer, startScripted } from '../helpers/scripted-http.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const root = path.resolve(import.meta.dirname, '../..');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-client-pack-'));
let server: TestServer;
let tenant: Tenant;
let scripted: ScriptedServer | undefined;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
});
afterAll(async () => {
  await scripted?.close();
  await server?.close();
  fs.rmSync(work, { recursive: true, force: true });
});

describe('the packed @tally/client', () => {
  it('installs from its tarball and works from ESM and CommonJS', async () => {
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', work], {
      cwd: path.join(root, 'clients/node'),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const [packed] = JSON.parse(out) as { filename: string; files: { path: string }[] }[];
    const files = packed!.files.map((f) => f.path);
    for (const f of [
      'dist/esm/index.js',
      'dist/esm/index.d.ts',
      'dist/cjs/index.js',
      'dist/cjs/index.d.ts',
      'README.md',
      'CHANGELOG.md',
    ]) {
      expect(files).toContain(f);
    }
    expect(files.some((f) => f.startsWith('src/'))).toBe(false);

    // Unpack as npm would install it, with no workspace around it.
    const modules = path.join(work, 'app/node_modules/@tally');
    fs.mkdirSync(modules, { recursive: true });
    execFileSync('tar', ['-xzf', path.join(work, packed!.filename), '-C', modules]);
    fs.renameSync(path.join(modules, 'package'), path.join(modules, 'client'));

    const call = `({ baseUrl: ${JSON.stringify(server.url)}, apiKey: ${JSON.stringify(tenant.apiKey)} })`;
    const body = `{ body: { event_name: 'packed', user_id: 'pack-user' } }`;
    // A server that answers 429 with Retry-After: 1 first, for the retries of the packed client.
    scripted = await startScripted([
      { ...envelope('RATE_LIMIT_EXCEEDED', 429), headers: { 'Retry-After': '1' } },
      { status: 200, body: { success: true, data: [], total: 0, limit: 50, offset: 0 } },
    ]);
    const retrying = `({ baseUrl: ${JSON.stringify(scripted.url)}, apiKey: 'tk_live_x', retry: { baseDelay: 10 } })`;
    const esm = `import { createTallyClient } from '@tally/client';
      const r = await createTallyClient${call}.eventsTrack(${body});
      const waited = [];
      const retried = await createTallyClient({ ...${retrying}, retry: { onRetry: (i) => waited.push(i.delay) } })
        .audiencesList({ query: { app_id: 'a' } });
      console.log(r.response.status, retried.response.status, waited.join());`;
    const cjs = `const { createTallyClient, isKnownErrorCode } = require('@tally/client');
      const bad = createTallyClient({ baseUrl: ${JSON.stringify(server.url)}, apiKey: 'tk_live_wrong' });
      Promise.all([createTallyClient${call}.eventsTrack(${body}), bad.eventsTrack(${body})]).then(([r, e]) =>
        console.log(r.response.status, e.error.code, isKnownErrorCode(e.error.code)));`;
    const typed = `import { createTallyClient, isKnownErrorCode, type KnownErrorCode } from '@tally/client';
      const tally = createTallyClient({ baseUrl: 'http://127.0.0.1:1', retry: true, timeout: 1000 });
      const { data, error } = await tally.pushSend({ body: { user_id: 'u', title: 't' }, retry: false });
      if (error) {
        // @ts-expect-error an unchecked code may be one this client does not know
        const unchecked: KnownErrorCode = error.code;
        if (isKnownErrorCode(error.code)) { const known: KnownErrorCode = error.code; console.log(known, unchecked); }
      } else console.log(data.deliveryId);
      export {};`;
    const app = path.join(work, 'app');
    fs.writeFileSync(path.join(app, 'esm.mjs'), esm);
    fs.writeFileSync(path.join(app, 'cjs.cjs'), cjs);
    fs.writeFileSync(path.join(app, 'typed.mts'), typed);
    // Asynchronously: the servers answering them run in this process.
    const node = (file: string) => promisify(execFile)(process.execPath, [file], { cwd: app, encoding: 'utf8' });
    const [status, retriedStatus, waited] = (await node('esm.mjs')).stdout.trim().split(' ');
    expect([status, retriedStatus]).toEqual(['200', '200']);
    expect(Number(waited)).toBeGreaterThanOrEqual(1000); // the Retry-After of the 429
    expect(scripted.arrivals).toHaveLength(2);
    expect(scripted.arrivals[1]!.at - scripted.arrivals[0]!.at).toBeGreaterThanOrEqual(1000);
    expect((await node('cjs.cjs')).stdout.trim()).toBe('200 INVALID_API_KEY true');

    // Strict TypeScript, resolving the package as an ES module through its exports.
    const options = ['--strict', '--noEmit', '--module', 'nodenext', '--target', 'es2022', '--lib', 'es2022,dom'];
    const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
    const compiled = await promisify(execFile)(process.execPath, [tsc, ...options, 'typed.mts'], { cwd: app }).then(
      () => '',
      (err: { stdout: string }) => err.stdout,
    );
    expect(compiled).toBe('');
  }, 90_000);
});
