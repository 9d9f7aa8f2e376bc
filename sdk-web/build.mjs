// Builds the browser SDK:
// - dist/service-web.js: minified IIFE, global ServiceWeb, for <script> tags and CDNs (the Tally
//   server builds the same IIFE itself on first request; this file is for hosting it elsewhere);
// - dist/service-web.mjs: the same as a minified ES module;
// - dist/npm/index.js: the ES module of the npm package @tally/web, and with `--package` (run by
//   `npm pack` through prepack) its type declarations, dist/npm/*.d.ts.
// Usage: node sdk-web/build.mjs [--package]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const common = {
  entryPoints: [here('./src/index.ts')],
  bundle: true,
  minify: true,
  target: ['es2020'],
  legalComments: 'none',
  mangleProps: /^_[a-z]/, // private members: shorter names in the bundle
  logLevel: 'warning',
};

await build({ ...common, format: 'iife', globalName: 'ServiceWeb', outfile: here('./dist/service-web.js') });
await build({ ...common, format: 'esm', outfile: here('./dist/service-web.mjs') });
await build({ ...common, minify: false, format: 'esm', sourcemap: true, outfile: here('./dist/npm/index.js') });
if (process.argv.includes('--package')) {
  const tsc = fileURLToPath(import.meta.resolve('typescript/bin/tsc'));
  execFileSync(process.execPath, [tsc, '-p', here('./tsconfig.package.json')], { stdio: 'inherit' });
}
const iife = readFileSync(here('./dist/service-web.js'));
console.log(
  `dist/service-web.js ${iife.length} bytes, ${gzipSync(iife).length} gzipped; dist/service-web.mjs and dist/npm built`,
);
