// Which e2e files a Prism run (vitest.prism.config.ts) may take: those that start Tally as a test
// server, the only servers a front puts Prism in front of (server.ts). Found in the code, so a new
// file is taken without touching a list: a file that calls `startTestServer(`, or a helper function
// that calls it (directly or through another such helper, in test/helpers/ or test/e2e/*-helpers).
// Files that start none (the language engine in process, server processes of their own, migrations
// on a database) would only run again with nothing going through Prism.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TEST = fileURLToPath(new URL('..', import.meta.url));

/** Files that start test servers but stay out of the Prism run, each with its reason. */
export const LEFT_OUT: Record<string, string> = {
  // Raw sockets and connection timing: a proxy in between changes what is measured.
  'http-timeouts': 'slow-loris and keep-alive timing on raw sockets',
  // Load: thousands of events to measure the writer, not the contract (a few minutes through Prism).
  'ingest-load': 'a load test (10,000 events from 50 clients)',
  'ingest-concurrency': 'a load and race test of the event writer',
  // Slow for what they add: each CLI command is a child process (the admin API they call is in
  // admin.test.ts and the others), and the packed client's smoke call needs `npm pack`.
  cli: 'a child process per command; the admin API is covered by admin.test.ts',
  'cli-operations': 'a child process per command; the admin API is covered by admin.test.ts',
  'cli-privacy': 'a child process per command; the admin API is covered by privacy-*.test.ts',
  'client-package': 'npm pack and two module systems around one call',
};

const ts = (dir: string) =>
  fs
    .readdirSync(path.join(TEST, dir))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(TEST, dir, f));

/** Names of the functions that start a test server: startTestServer and the helpers around it. */
export function serverStarters(): Set<string> {
  const helpers = [...ts('helpers'), ...ts('e2e').filter((f) => !f.endsWith('.test.ts'))].map((f) =>
    fs.readFileSync(f, 'utf8'),
  );
  const starters = new Set(['startTestServer']);
  for (let before = 0; before !== starters.size; ) {
    before = starters.size;
    for (const text of helpers) {
      for (const chunk of text.split(/^(?=export )/m)) {
        const declared = /^export (?:async )?function (\w+)/.exec(chunk);
        if (declared && calls(chunk.slice(declared[0].length), starters)) starters.add(declared[1]!);
      }
    }
  }
  return starters;
}

const calls = (text: string, names: Set<string>) => [...names].some((n) => new RegExp(`\\b${n}\\(`).test(text));

/** The e2e files (names without `.test.ts`, sorted) that start a test server and are not left out. */
export function prismFiles(): string[] {
  const starters = serverStarters();
  return ts('e2e')
    .filter((f) => f.endsWith('.test.ts'))
    .filter((f) => calls(fs.readFileSync(f, 'utf8'), starters))
    .map((f) => path.basename(f, '.test.ts'))
    .filter((name) => !(name in LEFT_OUT))
    .sort();
}
