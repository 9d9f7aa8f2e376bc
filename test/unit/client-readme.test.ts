// The examples of @tally/client's README compile against the built package (strict TypeScript,
// ES modules), and every operation of the client has one: a renamed operation or a changed field
// breaks this test before it breaks an integrator's copy of the example.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TallySdk } from '@tally/client';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const readme = fs.readFileSync(path.join(root, 'clients/node/README.md'), 'utf8');
const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-readme-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

describe("@tally/client's README", () => {
  it('has an example of every operation', () => {
    const operations = Object.getOwnPropertyNames(TallySdk.prototype).filter((name) => name !== 'constructor');
    expect(operations.length).toBeGreaterThan(60);
    const missing = operations.filter((name) => !blocks.some((block) => block.includes(`.${name}(`)));
    expect(missing).toEqual([]);
  });

  it('has examples that compile in strict TypeScript', () => {
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(work, 'node_modules'), 'dir');
    fs.writeFileSync(path.join(work, 'package.json'), JSON.stringify({ type: 'module' }));
    // The clients the examples use, created as in the README's set-up section.
    fs.writeFileSync(
      path.join(work, 'clients.d.ts'),
      `import type { TallyClient } from '@tally/client';
declare global { const tally: TallyClient; const admin: TallyClient; const mcp: TallyClient; }
export {};\n`,
    );
    for (const [i, block] of blocks.entries())
      fs.writeFileSync(path.join(work, `example-${i}.ts`), `${block}\nexport {};\n`);
    const compilerOptions = {
      strict: true,
      noEmit: true,
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      lib: ['ES2022', 'DOM'],
      types: ['node'],
      skipLibCheck: true,
    };
    fs.writeFileSync(path.join(work, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['*.ts'] }));
    const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
    let output = '';
    try {
      execFileSync(process.execPath, [tsc, '-p', work], { encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      output = (err as { stdout: string }).stdout;
    }
    expect(output).toBe('');
    expect(blocks.length).toBeGreaterThan(10);
  });
});
