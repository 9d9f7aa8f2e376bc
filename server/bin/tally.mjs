#!/usr/bin/env node
// Launcher of the `tally` command. It runs the compiled CLI (server/dist/cli.js, `npm run build`)
// when it matches the sources; in a development checkout whose build is missing or stale it runs
// the TypeScript sources through tsx instead, and with neither it says what to do.
import { buildStatus, distDir } from './build-state.mjs';

const status = buildStatus();
let tsx = null;
if (status !== 'fresh') {
  try {
    tsx = await import('tsx/esm/api');
  } catch {
    // not a development install
  }
}
if (tsx) {
  tsx.register();
  await import('../src/cli.ts');
} else if (status === 'missing') {
  process.stderr.write(
    'tally: the command is not built: run `npm run build` (with the development dependencies installed).\n',
  );
  process.exit(1);
} else {
  process.setSourceMapsEnabled(true);
  await import(new URL('cli.js', `file://${distDir}/`).href);
}
