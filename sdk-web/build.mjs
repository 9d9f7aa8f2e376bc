// Builds the browser SDK: dist/service-web.js (minified IIFE, global ServiceWeb, for <script>
// tags and CDNs) and dist/service-web.mjs (ES module for bundlers). The Tally server builds the
// same IIFE itself on first request; this file is for hosting the SDK elsewhere.
// Usage: node sdk-web/build.mjs
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
const iife = readFileSync(here('./dist/service-web.js'));
console.log(`dist/service-web.js ${iife.length} bytes, ${gzipSync(iife).length} gzipped; dist/service-web.mjs built`);
