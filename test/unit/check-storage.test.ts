// The storage check (scripts/check-storage.mjs) run on small trees written here: every rule must
// report its line, ordinary messages must not trip it, exemptions must hide exactly what they name
// and fail once stale. So the check cannot quietly stop finding anything.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const script = path.join(repo, 'scripts', 'check-storage.mjs');
const roots: string[] = [];

// Each line that the check must report ends with `// expect: <rule>`.
const STORAGE = `import type { Knex } from 'knex';
export type Db = Knex;
export const findUser = (db: Db, appId: string, id: string) => db('users').where({ app_id: appId, id }).first();
export const ping = (db: Db) => db.raw('select 1 from users');
`;

const BAD = `import type { Knex } from 'knex'; // expect: driver-import
import type { Db } from '../storage/handle.js';

interface Ctx {
  db: Db;
}

export type Handle = import('pg').Client; // expect: driver-import
export type Old = Knex;

export async function users(ctx: Ctx, appId: string) {
  const handle = ctx.db;
  const rows = await handle('users').where({ app_id: appId }); // expect: db-handle
  await ctx.db.transaction(async () => undefined); // expect: db-handle
  const { raw } = ctx.db; // expect: db-handle
  const loose = ctx.db as unknown as Record<string, (...a: unknown[]) => unknown>;
  loose.whereRaw('true'); // expect: db-call
  const query = \`select id, name from users where app_id = \${appId}\`; // expect: sql-text
  const fragment = "coalesce(properties, '{}'::jsonb)"; // expect: sql-text
  const statement = 'insert into ' + 'events (id) values (1)'; // expect: sql-text
  const change = 'UPDATE users SET email = NULL'; // expect: sql-text
  const purge = 'delete from event_dedup'; // expect: sql-text
  const cte = 'with recent as (select 1)'; // expect: sql-text
  const placeholder = 'app_id = ? and not is_bot'; // expect: sql-text
  const timeout = 'SET LOCAL statement_timeout = 100'; // expect: sql-text
  const stats = 'ANALYZE public.events'; // expect: sql-text
  return [rows, raw, query, fragment, statement, change, purge, cte, placeholder, timeout, stats];
}

export async function dynamic() {
  return import('knex'); // expect: driver-import
}
`;

const CLEAN = `// Messages people read: none of them is SQL.
export const messages = [
  'Select an app from the list, then update its settings.',
  'Set understood=false when the question needs anything else.',
  'Delete the key from your server, then create a new one.',
  'Insert the snippet into your page.',
  'With this key, you can read data as soon as it arrives (within a minute).',
  'Open http://[::1]:3000 or fe80::1 to check.',
  'Order by date: newest first.',
  'Events are grouped by day, and counted (within reason).',
  'Update your settings to use this key.',
];
export const windowsPath = String.raw\`C:\\data\`;
export const jobs = import('pg-boss');
`;

const LEGACY = `export const old = 'select * from events';
`;

// A handler may name storage types, never call storage itself.
const HANDLER = `import type { Db } from '../storage/handle.js';
import { findUser } from '../storage/handle.js'; // expect: handler-storage
export const handler = (db: Db) => findUser(db, 'a', 'b');
`;

function tree(files: Record<string, string>, withModules = true): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'storage-check-'));
  roots.push(root);
  if (withModules) fs.symlinkSync(path.join(repo, 'node_modules'), path.join(root, 'node_modules'), 'dir');
  fs.writeFileSync(path.join(root, 'package.json'), '{"type":"module"}\n');
  for (const [name, text] of Object.entries(files)) {
    const file = path.join(root, 'server', 'src', name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  }
  return root;
}

function run(root: string, exempt: string[]) {
  const args = [script, '--root', root, ...exempt.flatMap((e) => ['--exempt', e])];
  const result = spawnSync(process.execPath, args, { encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** `file:line [rule]` of every `// expect:` marker in a fixture. */
function expected(name: string, text: string): string[] {
  return text
    .split('\n')
    .flatMap((line, i) => {
      const m = /\/\/ expect: ([a-z-]+)/.exec(line);
      return m ? [`server/src/${name}:${i + 1} [${m[1]}]`] : [];
    })
    .sort();
}

/** `file:line [rule]` of every finding the check printed. */
function reported(output: string): string[] {
  return [...output.matchAll(/^(server\/src\/\S+?):(\d+):\d+ {2}\[([a-z-]+)\]/gm)]
    .map((m) => `${m[1]}:${m[2]} [${m[3]}]`)
    .sort();
}

afterAll(() => {
  for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
});

describe('check-storage', () => {
  it('reports every use of the database and every SQL string outside storage/, by file and line', () => {
    const root = tree({
      'storage/handle.ts': STORAGE,
      'services/bad.ts': BAD,
      'services/clean.ts': CLEAN,
      'http/handler.ts': HANDLER,
      'legacy/old.ts': LEGACY,
    });
    // legacy/ is exempt and still holds SQL; clean.ts and gone.ts are stale exemptions.
    const { status, output } = run(root, ['server/src/legacy/', 'server/src/services/clean.ts', 'server/src/gone.ts']);
    expect(status, output).toBe(1);
    expect(reported(output)).toEqual(
      [...expected('services/bad.ts', BAD), ...expected('http/handler.ts', HANDLER)].sort(),
    );
    expect(output).toContain("SQL belongs in a wing's queries/ folder or server/src/storage/");
    expect(output).toContain('server/src/services/clean.ts is in the exempt list but has nothing left to exempt');
    expect(output).toContain('server/src/gone.ts is in the exempt list but does not exist');
    expect(output).not.toContain('server/src/legacy/ is in the exempt list');
  });

  it("passes a tree whose only SQL is in storage/, a wing's queries/ folder or an exempt path", () => {
    const root = tree({
      'storage/handle.ts': STORAGE,
      'analytics/queries/metrics.ts': STORAGE,
      'services/clean.ts': CLEAN,
      'legacy/old.ts': LEGACY,
    });
    const { status, output } = run(root, ['server/src/legacy/']);
    expect(output).toContain('No database access or SQL outside server/src/storage/');
    expect(status, output).toBe(0);
  });

  it('fails on a tree with no sources rather than passing it', () => {
    const root = tree({});
    const { status, output } = run(root, []);
    expect(status, output).toBe(1);
    expect(output).toContain('No TypeScript files under');
  });

  it("fails when it cannot see knex's types, which the handle rule depends on", () => {
    const root = tree({ 'storage/handle.ts': STORAGE, 'services/clean.ts': CLEAN }, false);
    const { status, output } = run(root, []);
    expect(status, output).toBe(1);
    expect(output).toContain("Could not resolve the database drivers' types");
  });
});
