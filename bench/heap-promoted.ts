// What single events allocate that outlives the young generation (and so is copied by scavenges and
// collected later by the major collector): a fresh Tally (compiled) with bench/heap-sampler.mjs
// preloaded, single events on a fixed schedule (open loop) at BENCH_GC_RATE a second (2,000) for
// BENCH_SECONDS (8) while V8's sampling heap profiler runs, then the bytes a request by allocation
// site and by stack, heaviest first. BENCH_DATABASE_URL for PostgreSQL, else the embedded database;
// BENCH_HEAP_ALL=1 counts everything allocated, young deaths included.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { compiledServer, event, scratchDatabase, tally } from './ingest.js';
import { openLoop } from './open-loop.js';

interface SampleNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children: SampleNode[];
}

const rate = Number(process.env.BENCH_GC_RATE ?? 2000);
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Bytes a request by allocation site and by stack (up to six callers), heaviest first. */
function summarize(file: string, requests: number): void {
  const { head, samples } = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    head: SampleNode;
    samples: { nodeId: number; size: number }[];
  };
  const nodes = new Map<number, { node: SampleNode; parent?: SampleNode }>();
  const walk = (node: SampleNode, parent?: SampleNode) => {
    nodes.set(node.id, { node, parent });
    for (const child of node.children) walk(child, node);
  };
  walk(head);
  const label = (n: SampleNode) =>
    `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(node_modules\/|server\/dist\/)/, '')}:${n.callFrame.lineNumber + 1}`;
  const bySite = new Map<string, number>();
  const byStack = new Map<string, number>();
  for (const { nodeId, size } of samples) {
    const node = nodes.get(nodeId)!.node;
    bySite.set(label(node), (bySite.get(label(node)) ?? 0) + size);
    const chain: string[] = [];
    for (let at: SampleNode | undefined = node; at && chain.length < 7; at = nodes.get(at.id)?.parent) {
      if (at.callFrame.functionName !== '(root)') chain.push(label(at));
    }
    byStack.set(chain.join(' < '), (byStack.get(chain.join(' < ')) ?? 0) + size);
  }
  const perRequest = (bytes: number) => `${(bytes / requests).toFixed(0).padStart(6)} B`;
  const total = samples.reduce((sum, s) => sum + s.size, 0);
  console.log(
    `${perRequest(total)} a request ${process.env.BENCH_HEAP_ALL === '1' ? 'allocated' : 'outlived the young generation'} (${requests} requests)`,
  );
  console.log('--- by allocation site');
  for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 20))
    console.log(perRequest(bytes), site);
  console.log('--- by stack');
  for (const [stack, bytes] of [...byStack].sort((a, b) => b[1] - a[1]).slice(0, 12))
    console.log(perRequest(bytes), stack);
}

async function main() {
  const admin = process.env.BENCH_DATABASE_URL;
  const scratch = admin ? await scratchDatabase(admin) : undefined;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tally-heap-')), 'samples.json');
  const server = await tally(scratch?.url, {
    compiled: await compiledServer(),
    nodeArgs: ['--import', path.join(import.meta.dirname, 'heap-sampler.mjs')],
    env: { HEAP_SAMPLES_FILE: file, HEAP_SAMPLES_ALL: process.env.BENCH_HEAP_ALL === '1' ? '1' : '0' },
  });
  const load = { url: `${server.url}/v1/events`, headers: { authorization: `Bearer ${server.apiKey}` } };
  const body = JSON.stringify(event(1));
  try {
    await openLoop({ ...load, body, rate: rate / 4, seconds: 2, warmupSeconds: 1 });
    server.child.kill('SIGUSR1');
    await sleep(500);
    const run = await openLoop({ ...load, body, rate, seconds, warmupSeconds: 0 });
    server.child.kill('SIGUSR2');
    for (let i = 0; i < 50 && !fs.existsSync(file); i++) await sleep(200);
    summarize(file, run.ok);
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => server.child.once('exit', r));
    fs.rmSync(server.dataDir, { recursive: true, force: true });
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
    await scratch?.drop();
  }
}

await main();
