// Whether the compiled server (server/dist) was built from the sources as they are now. The build
// (scripts/build.mjs) records a hash of every source it compiles; `npm start` and the `tally`
// launcher compare it with the sources on disk, so a checkout that moved on is never run stale.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../', import.meta.url));
export const distDir = path.join(root, 'server/dist');
const stampFile = path.join(distDir, 'build.json');

/** What the build reads: the server, the browser SDK, the typed client, and the contract. */
const SOURCES = ['server/src', 'sdk-web/src', 'clients/node/src', 'generated/openapi/openapi.yaml'];

function files(entry) {
  const full = path.join(root, entry);
  if (!fs.existsSync(full)) return [];
  if (!fs.statSync(full).isDirectory()) return [entry];
  return fs
    .readdirSync(full, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile() && !d.name.endsWith('.test.ts'))
    .map((d) => path.relative(root, path.join(d.parentPath, d.name)))
    .sort();
}

/** A hash of every source file's path and content. */
export function sourceHash() {
  const hash = createHash('sha256');
  for (const file of SOURCES.flatMap(files)) {
    hash
      .update(file)
      .update('\0')
      .update(fs.readFileSync(path.join(root, file)))
      .update('\0');
  }
  return hash.digest('hex');
}

/** The recorded build, or null when there is none. */
export function builtState() {
  try {
    return JSON.parse(fs.readFileSync(stampFile, 'utf8'));
  } catch {
    return null;
  }
}

export function recordBuild(hash) {
  fs.writeFileSync(stampFile, `${JSON.stringify({ sources: hash, built_at: new Date().toISOString() }, null, 2)}\n`);
}

/** `fresh`, `stale` (built from other sources) or `missing`. */
export function buildStatus() {
  const built = builtState();
  if (!built || !fs.existsSync(path.join(distDir, 'main.js'))) return 'missing';
  return built.sources === sourceHash() ? 'fresh' : 'stale';
}
