#!/usr/bin/env node
// Compiles the TypeSpec contract (spec/) into the committed OpenAPI documents and API reference:
//   generated/openapi/openapi.yaml      OpenAPI 3.1 (served at /openapi.yaml, used by the validator)
//   generated/openapi/openapi.3.0.yaml  OpenAPI 3.0 copy, for tools that do not read 3.1
//   generated/docs/index.html           static API reference (Redoc, self-contained)
// then lints both documents with Redocly and Spectral. Exits non-zero on the first failure.
// Usage: node scripts/compile-spec.mjs
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsp = join(root, 'node_modules/@typespec/compiler/cmd/tsp.js');
const redocly = join(root, 'node_modules/@redocly/cli/bin/cli.js');
const redoclyConfig = join(root, 'spec/redocly.yaml');
const spectral = join(root, 'node_modules/@stoplight/spectral-cli/dist/index.js');
const spectralRuleset = 'spec/.spectral.yaml';

// The emitter writes one folder per OpenAPI version; these are the files we keep, and where.
const outputs = [
  { emitted: '3.1.0/openapi.yaml', target: 'generated/openapi/openapi.yaml' },
  { emitted: '3.0.0/openapi.yaml', target: 'generated/openapi/openapi.3.0.yaml' },
];
const docs = 'generated/docs/index.html';
/** "Redocly" as a small inline SVG, in place of the logo the renderer fetches from its CDN. */
const REDOC_CREDIT = `data:image/svg+xml,${encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="16" viewBox="0 0 64 16"><text x="0" y="12" font-family="sans-serif" font-size="12" fill="#0044d4">Redocly</text></svg>',
)}`;

const quietEnv = {
  ...process.env,
  NO_COLOR: '1',
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
};

/** Runs a Node CLI; prints its output only when it fails (or when VERBOSE is set). */
function run(label, script, args) {
  const started = Date.now();
  const result = spawnSync(process.execPath, [script, ...args], {
    cwd: root,
    env: quietEnv,
    encoding: 'utf8',
  });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  const ok = result.status === 0 && !result.error;
  if (!ok || process.env.VERBOSE) process.stderr.write(withoutBanners(output));
  if (!ok) {
    const reason = result.error ? result.error.message : `exit code ${result.status}`;
    throw new Error(`${label} failed (${reason})`);
  }
  console.log(`ok  ${label} (${Date.now() - started} ms)`);
}

// Redocly prints a boxed Node 20 deprecation notice on every run; it is noise here.
function withoutBanners(text) {
  return text
    .split('\n')
    .filter((line) => !/^\s*[╔║╚]/.test(line))
    .join('\n');
}

/** Writes a file only when its content changes, so timestamps stay meaningful. */
function writeIfChanged(path, content) {
  let current = null;
  try {
    current = readFileSync(path, 'utf8');
  } catch {}
  if (current === content) return false;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
  return true;
}

function main() {
  const started = Date.now();
  const out = mkdtempSync(join(tmpdir(), 'tally-spec-'));
  try {
    // --warn-as-error: a warning fails the build, so the contract compiles with none.
    run('tsp compile spec', tsp, ['compile', 'spec', '--warn-as-error', '--output-dir', out]);
    for (const { emitted, target } of outputs) {
      const content = readFileSync(join(out, '@typespec/openapi3', emitted), 'utf8');
      const changed = writeIfChanged(join(root, target), content);
      console.log(`    ${target}${changed ? ' (updated)' : ' (unchanged)'}`);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }

  for (const { target } of outputs) {
    // spec/redocly.yaml extends recommended-strict: any finding, warnings included, fails.
    run(`redocly lint ${target}`, redocly, [
      'lint',
      '--config',
      relative(root, redoclyConfig),
      '--format',
      'summary',
      target,
    ]);
  }

  // spec/.spectral.yaml extends spectral:oas; --fail-severity warn: a warning fails too.
  run(`spectral lint ${outputs.map((o) => o.target).join(' ')}`, spectral, [
    'lint',
    '--ruleset',
    spectralRuleset,
    '--fail-severity',
    'warn',
    '--quiet',
    ...outputs.map((o) => o.target),
  ]);

  // --inlineBundle embeds Redoc's script, so the reference works offline and loads nothing
  // from a third-party CDN (Tally is self-hosted).
  const docsPath = join(root, docs);
  mkdirSync(dirname(docsPath), { recursive: true });
  run(`redocly build-docs -> ${docs}`, redocly, [
    'build-docs',
    outputs[0].target,
    '--config',
    relative(root, redoclyConfig),
    '--inlineBundle',
    '-o',
    docs,
  ]);
  // The one thing the inline bundle still fetches from outside is Redoc's "API docs by" logo
  // (cdn.redoc.ly): replaced by the same credit as an inline image, so the page needs nothing else.
  const html = readFileSync(docsPath, 'utf8');
  const offline = html.replace(/https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(-full)?\.svg/g, REDOC_CREDIT);
  if (/https:\/\/cdn\.redoc\.ly\//.test(offline))
    throw new Error('the reference still loads something from cdn.redoc.ly');
  writeFileSync(docsPath, offline);

  console.log(`done in ${Date.now() - started} ms`);
}

try {
  main();
} catch (error) {
  console.error(`compile-spec: ${error.message}`);
  process.exit(1);
}
