// `npm run build`: everything a production install runs, compiled to JavaScript.
// - the typed client (@tally/client, ESM and CommonJS, which the CLI uses);
// - the server and the CLI: server/src -> server/dist, one JavaScript file per source (esbuild,
//   no bundling, source maps), with the embedded database's worker copied beside;
// - the browser SDK: sdk-web/dist/service-web.js (the script the server serves) and .mjs.
// Type checking is `npm run typecheck` (part of `npm run check`); this only transpiles.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { distDir, recordBuild, root, sourceHash } from '../server/bin/build-state.mjs';

const started = Date.now();
const only = process.argv.includes('--server-only');

if (!only) execFileSync('npm', ['run', 'build', '-w', '@tally/client'], { cwd: root, stdio: 'inherit' });

const hash = sourceHash();
const src = path.join(root, 'server/src');
const entries = fs
  .readdirSync(src, { recursive: true, withFileTypes: true })
  .filter((d) => d.isFile() && d.name.endsWith('.ts') && !d.name.endsWith('.test.ts') && !d.name.endsWith('.d.ts'))
  .map((d) => path.join(d.parentPath, d.name));

fs.rmSync(distDir, { recursive: true, force: true });
await build({
  entryPoints: entries,
  outdir: distDir,
  outbase: src,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
for (const d of fs.readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!d.isFile() || !d.name.endsWith('.mjs')) continue;
  const from = path.join(d.parentPath, d.name);
  const to = path.join(distDir, path.relative(src, from));
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.copyFileSync(from, to);
}

execFileSync(process.execPath, [path.join(root, 'sdk-web/build.mjs')], { cwd: root, stdio: 'inherit' });
recordBuild(hash);
console.log(`built server/dist (${entries.length} files) and the browser SDK in ${Date.now() - started} ms`);
