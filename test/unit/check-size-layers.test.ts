// The size check (scripts/check-size.mjs) and the layer rules (.dependency-cruiser.cjs, run by
// dependency-cruiser as `npm run check` runs it) on small trees written here: each must report a
// file over 400 lines, a function over 80, an import that breaks the wing rules and a cycle, and
// pass a tree that keeps them. So neither can quietly stop finding anything.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const roots: string[] = [];

function tree(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-check-'));
  roots.push(root);
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), text);
  }
  return root;
}

afterAll(() => {
  for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
});

const lines = (n: number, line = 'export const x = 1;') => `${Array.from({ length: n }, () => line).join('\n')}\n`;
/** A function whose declaration spans `n` lines. */
const fn = (name: string, n: number) => `export function ${name}() {\n${lines(n - 2, '  void 0;')}}\n`;

function sizeCheck(root: string) {
  const r = spawnSync(process.execPath, [path.join(repo, 'scripts', 'check-size.mjs'), '--root', root], {
    encoding: 'utf8',
  });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe('check-size', () => {
  it('reports a file over 400 lines and a function over 80, wherever they are, by file and line', () => {
    const root = tree({
      'server/src/big.ts': lines(401),
      'server/src/ok.ts': lines(400),
      'server/src/long.ts': `// header\n${fn('fine', 80)}${fn('tooLong', 81)}`,
      'scripts/tool.mjs': `const run = () => {\n${lines(80, '  void 0;')}};\nrun();\n`,
      'spec/models.tsp': lines(420, 'model A {}'),
      'test/e2e/long.test.ts': lines(450),
    });
    const { status, output } = sizeCheck(root);
    expect(status, output).toBe(1);
    const found = [...output.matchAll(/^(\S+):(\d+) {2}\[([a-z-]+)\]/gm)].map((m) => `${m[1]}:${m[2]} ${m[3]}`);
    expect(found.sort()).toEqual(
      [
        'server/src/big.ts:1 file-size',
        'server/src/long.ts:82 function-size',
        'scripts/tool.mjs:1 function-size',
        'spec/models.tsp:1 file-size',
        'test/e2e/long.test.ts:1 file-size',
      ].sort(),
    );
    expect(output).toContain('tooLong runs 81 lines');
  });

  it('leaves out generated code and the describe() callbacks of test suites', () => {
    const root = tree({
      'server/src/ok.ts': fn('fine', 80),
      'server/src/error-codes.gen.ts': lines(900),
      'clients/node/src/gen/sdk.ts': lines(900),
      'test/e2e/suite.test.ts': `describe('a', () => {\n${lines(150, '  it("x", () => {});')}});\n`,
    });
    const { status, output } = sizeCheck(root);
    expect(output).toContain('files within 400 lines');
    expect(status, output).toBe(0);
  });

  it('holds the language engine to the same limits (issue 34)', () => {
    const root = tree({
      'server/src/ok.ts': fn('fine', 80),
      'server/src/language/analytics.ts': `${lines(401)}`,
      'server/src/language/clause.ts': fn('engine', 81),
    });
    const { status, output } = sizeCheck(root);
    expect(status, output).toBe(1);
    expect(output).toContain('server/src/language/analytics.ts:1  [file-size] 401 lines');
    expect(output).toContain('engine runs 81 lines');
  });

  it('fails on a tree with no sources rather than passing it', () => {
    const { status, output } = sizeCheck(tree({ 'README.md': '# nothing\n' }));
    expect(status, output).toBe(2);
  });
});

function layerCheck(root: string) {
  fs.writeFileSync(
    path.join(root, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext' }, include: ['server'] }),
  );
  const bin = path.join(repo, 'node_modules', '.bin', 'depcruise');
  const r = spawnSync(
    bin,
    ['server/src', '--config', path.join(repo, '.dependency-cruiser.cjs'), '--output-type', 'err'],
    {
      cwd: root,
      encoding: 'utf8',
    },
  );
  const output = `${r.stdout}${r.stderr}`;
  const rules = [...output.matchAll(/error ([a-z-]+): (\S+) →\s*(\S+)/g)].map((m) => `${m[1]} ${m[2]} → ${m[3]}`);
  return { status: r.status, output, rules };
}

describe('layer rules', () => {
  const clean = {
    'server/src/errors.ts': 'export class AppError extends Error {}\n',
    'server/src/language/engine.ts':
      "import { AppError } from '../errors.js';\nexport const read = () => new AppError();\n",
    'server/src/analytics/query.ts':
      "import { read } from '../language/engine.js';\nexport const ask = () => read();\n",
    'server/src/analytics/queries/rows.ts':
      'export interface Row { id: string }\nexport const rows = (): Row[] => [];\n',
    'server/src/http/analytics.ts':
      "import { ask } from '../analytics/query.js';\nexport const handle = () => ask();\n",
  };

  it('passes a tree whose imports go down the floors', () => {
    const { status, output, rules } = layerCheck(tree(clean));
    expect(rules).toEqual([]);
    expect(status, output).toBe(0);
  });

  it('reports an import up the floors, into an adapter, into another wing’s queries, and a cycle', () => {
    const root = tree({
      ...clean,
      // the language wing sits below analytics
      'server/src/language/engine.ts': "import { ask } from '../analytics/query.js';\nexport const read = () => ask;\n",
      // the ground floor imports only the ground floor
      'server/src/time.ts': "import { handle } from './http/analytics.js';\nexport const now = handle;\n",
      // another wing calls operations, never queries (a type is fine)
      'server/src/audiences/members.ts':
        "import type { Row } from '../analytics/queries/rows.js';\nimport { rows } from '../analytics/queries/rows.js';\nexport const all = (): Row[] => rows();\n",
    });
    const { status, rules } = layerCheck(root);
    expect(status).not.toBe(0);
    expect(rules).toEqual(
      expect.arrayContaining([
        'wing-language server/src/language/engine.ts → server/src/analytics/query.ts',
        'ground-imports-ground server/src/time.ts → server/src/http/analytics.ts',
        'queries-are-private server/src/audiences/members.ts → server/src/analytics/queries/rows.ts',
      ]),
    );
    // language/engine.ts ↔ analytics/query.ts, reported from either end
    const cycles = rules.filter((r) => r.startsWith('no-cycle '));
    expect(cycles.length).toBeGreaterThan(0);
    for (const c of cycles) {
      expect(c).toMatch(
        /^no-cycle server\/src\/(language\/engine|analytics\/query)\.ts → server\/src\/(language\/engine|analytics\/query)\.ts$/,
      );
    }
  });
});
