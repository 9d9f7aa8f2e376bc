// `npm run test:prism`: the e2e suite once more, with every test server reached through Stoplight
// Prism as a validating proxy (TEST_PRISM=1; test/helpers/prism.ts). An answer Prism finds
// breaking the document, or a request it finds breaking the document that the server accepted,
// fails the run. CI runs it once, after the pass on PostgreSQL.
//
// Which files (test/helpers/prism-files.ts): every e2e file that starts Tally as a test server
// (found in the code), except the few left out there with their reason. `PRISM_ALL=1` runs them
// all (about 54 files: too long for CI); otherwise the run is capped: the two files built from the
// document itself (contract-statuses: every documented error status of every operation;
// no-500: generated requests for every operation) and one of SHARDS shares of the others,
// chosen by the commit (PRISM_SHARD=k/n to pick one), so consecutive commits cover them all.
import { execSync } from 'node:child_process';
import { defineConfig } from 'vitest/config';
import { prismFiles } from './test/helpers/prism-files.js';
import base from './vitest.config.js';

const CORE = ['contract-statuses', 'no-500'];
const SHARDS = 3;

/** `k/n` from PRISM_SHARD, else share (HEAD's hash mod n) of n = SHARDS. */
function shard(): { k: number; n: number } {
  const given = /^(\d+)\/(\d+)$/.exec(process.env.PRISM_SHARD ?? '');
  if (given) return { k: Number(given[1]), n: Number(given[2]) };
  let head = '0';
  try {
    head = execSync('git rev-parse HEAD', { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    // Not a git checkout: the first share.
  }
  return { k: Number.parseInt(head.slice(0, 8), 16) % SHARDS || 0, n: SHARDS };
}

function selected(): string[] {
  const all = prismFiles();
  if (process.env.PRISM_ALL === '1') return all;
  const { k, n } = shard();
  const rest = all.filter((name) => !CORE.includes(name));
  const share = rest.filter((_, i) => i % n === k);
  console.log(`Prism run: ${CORE.length} core files and share ${k}/${n} (${share.length} of ${rest.length} others)`);
  return [...CORE, ...share];
}

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: selected().map((name) => `test/e2e/${name}.test.ts`),
    // Fewer generated requests per operation than the main pass (12): the contract is what is
    // checked here, and no-500.test.ts has had its full run already.
    env: { ...base.test?.env, FUZZ_RUNS: process.env.FUZZ_RUNS ?? '4' },
    // Three more hops per request (front, Prism, dispatcher) on a busy machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
