// @tally/client as an integrator installs it: the packed tarball holds ESM and CommonJS builds
// with types, and both module systems load it and reach a running server.
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const root = path.resolve(import.meta.dirname, '../..');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-client-pack-'));
let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
});
afterAll(async () => {
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
    const esm = `import { createTallyClient } from '@tally/client';
      const r = await createTallyClient${call}.eventsTrack(${body});
      console.log(r.response.status);`;
    const cjs = `const { createTallyClient } = require('@tally/client');
      createTallyClient${call}.eventsTrack(${body}).then((r) => console.log(r.response.status));`;
    const app = path.join(work, 'app');
    fs.writeFileSync(path.join(app, 'esm.mjs'), esm);
    fs.writeFileSync(path.join(app, 'cjs.cjs'), cjs);
    // Asynchronously: the server answering them runs in this process.
    const node = (file: string) => promisify(execFile)(process.execPath, [file], { cwd: app, encoding: 'utf8' });
    expect((await node('esm.mjs')).stdout.trim()).toBe('200');
    expect((await node('cjs.cjs')).stdout.trim()).toBe('200');
  });
});
