// CI step: a production install, as an operator makes one, away from the checkout the tests use.
// Copies the checkout (its files, without what .gitignore leaves out) to a scratch folder, runs `npm ci && npm run build &&
// npm prune --omit=dev` there, checks the build tools are gone, starts the server with `npm start`,
// and calls it: health, an event with the first start's API key, the browser SDK script, a CLI
// command. Prints the start-up time and memory of the compiled server. Exits non-zero on any failure.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-production-'));
const dataDir = path.join(scratch, '.data');
const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { cwd: scratch, stdio: 'inherit', ...opts });
const fail = (message) => {
  throw new Error(message);
};

function copyCheckout() {
  const tracked = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\0')
    .filter(Boolean);
  for (const file of tracked) {
    const from = path.join(root, file);
    if (!fs.existsSync(from)) continue; // deleted in the work tree
    fs.mkdirSync(path.dirname(path.join(scratch, file)), { recursive: true });
    fs.copyFileSync(from, path.join(scratch, file));
  }
  console.log(`copied ${tracked.length} tracked files to ${scratch}`);
}

function install() {
  run('npm', ['ci', '--no-audit', '--no-fund']);
  run('npm', ['run', 'build']);
  run('npm', ['prune', '--omit=dev', '--no-audit', '--no-fund']);
  for (const tool of ['tsx', 'esbuild', 'typescript', 'vitest']) {
    if (fs.existsSync(path.join(scratch, 'node_modules', tool))) fail(`${tool} is still installed after the prune`);
  }
}

async function waitForHealth(url, child, started) {
  for (;;) {
    if (child.exitCode !== null || child.signalCode)
      fail(`the server exited during start-up (${child.exitCode ?? child.signalCode})`);
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) return Date.now() - started;
    } catch {
      // not listening yet
    }
    if (Date.now() - started > 60_000) fail('the server did not answer /healthz within 60 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Resident memory of the server's node process (npm start runs it as a child of npm). */
function rssOf(pid) {
  const status = (p) => fs.readFileSync(`/proc/${p}/status`, 'utf8');
  const children = (p) =>
    fs.existsSync(`/proc/${p}/task/${p}/children`)
      ? fs.readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)
      : [];
  let rss = 0;
  const walk = (p) => {
    const m = /VmRSS:\s+(\d+) kB/.exec(status(p));
    if (m && /Name:\s+node/.test(status(p))) rss = Math.max(rss, Number(m[1]));
    for (const c of children(p)) walk(c);
  };
  walk(pid);
  return rss / 1024;
}

async function exercise(url) {
  const credentials = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
  const event = await fetch(`${url}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${credentials.api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ event_name: 'production_check', user_id: 'operator-1' }),
  });
  if (event.status !== 202 && event.status !== 200)
    fail(`POST /v1/events answered ${event.status}: ${await event.text()}`);
  const sdk = await fetch(`${url}/sdk/v1/service-web.js`);
  const script = await sdk.text();
  if (sdk.status !== 200 || !script.includes('ServiceWeb')) fail(`the SDK script answered ${sdk.status}`);
  const listed = execFileSync(
    process.execPath,
    [
      'server/bin/tally.mjs',
      'keys',
      'list',
      credentials.app_id,
      '--json',
      '--url',
      url,
      '--admin-token',
      credentials.admin_token,
    ],
    { cwd: scratch, encoding: 'utf8' },
  );
  if (!listed.includes(credentials.app_id)) fail(`tally keys list printed: ${listed}`);
  console.log(`event accepted, SDK served (${script.length} bytes), the CLI listed the app's keys`);
}

async function main() {
  copyCheckout();
  install();
  const port = 4000 + Math.floor(Math.random() * 2000);
  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  const child = spawn('npm', ['start'], {
    cwd: scratch,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  try {
    const startup = await waitForHealth(url, child, started);
    await exercise(url);
    console.log(`compiled server: ready in ${startup} ms, ${rssOf(child.pid).toFixed(0)} MiB resident after the calls`);
    if (/\btsx\b/.test(fs.readdirSync(path.join(scratch, 'node_modules')).join(' '))) fail('tsx is installed');
  } catch (err) {
    console.error(output);
    throw err;
  } finally {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {}
    await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
