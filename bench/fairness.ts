// Fairness benchmark (issue 25): for BENCH_FAIRNESS_SECONDS (default 300) one organization loops a
// query that runs into the sandbox's time limit, from three keys (two REST keys with two requests
// at a time each, and an MCP key with two tool calls at a time), while another organization runs
// simple SQL (one query a second) and ingests events (ten a second). The victim's requests are paced
// and timed by wrk (its latency percentiles); the attacker is a Node loop that waits 100 ms after a
// refusal. Reports the victim's SQL p50/p95, its ingestion p95, the embedded database's restarts
// (counted from the server's log) and what the attacker got back. Tally runs in its own process
// with the default rate limits and query timeouts (batch ingestion raised for seeding only).
// BENCH_TALLY_ROOT runs another checkout of Tally (the code before a change) with this harness.
//   npm run bench -- fairness                                           # embedded
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- fairness
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { scratchDatabase, tally } from './ingest.js';

const SECONDS = Number(process.env.BENCH_FAIRNESS_SECONDS ?? 300);
const ROOT = path.resolve(process.env.BENCH_TALLY_ROOT ?? path.resolve(import.meta.dirname, '..'));
const ATTACK_EVENTS = Number(process.env.BENCH_ATTACK_EVENTS ?? 25_000);
const ATTACKING = process.env.BENCH_FAIRNESS_ATTACK !== 'off';
/** The query: a self-join on a column with one value pairs every event with every other. */
const ATTACK = 'select count(*) from events a join events b on a.event_name = b.event_name';
const VICTIM_SQL = 'SELECT event_name, count(*) AS n FROM events GROUP BY 1 ORDER BY 2 DESC';

interface Tally {
  url: string;
  adminToken: string;
  restarts: () => number;
  stop(): Promise<void>;
}

async function startTally(databaseUrl: string | undefined): Promise<Tally> {
  let restarts = 0;
  const t = await tally(databaseUrl, {
    root: ROOT,
    // the default rate limits, but batches for seeding
    env: { RATE_LIMITS: JSON.stringify({ batch: 100_000 }) },
    onLine: (line) => {
      if (line.includes('"msg":"restarting the embedded database"')) restarts++;
    },
  });
  return {
    url: t.url,
    adminToken: t.adminToken,
    restarts: () => restarts,
    async stop() {
      t.child.kill('SIGTERM');
      await new Promise((r) => t.child.on('exit', r));
      fs.rmSync(t.dataDir, { recursive: true, force: true });
    },
  };
}

async function post(url: string, token: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${url}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** An organization with one app and the keys asked for. */
async function tenant(t: Tally, name: string, kinds: ('rest' | 'mcp')[]) {
  const org = await post(`${t.url}/admin/v1/organizations`, t.adminToken, { name });
  const app = await post(`${t.url}/admin/v1/apps`, t.adminToken, { organization_id: org.organization_id, name });
  const keys: string[] = [];
  for (const kind of kinds) {
    keys.push(String((await post(`${t.url}/admin/v1/apps/${app.app_id}/keys`, t.adminToken, { kind })).key));
  }
  return { appId: String(app.app_id), keys };
}

async function seed(t: Tally, key: string, count: number, name: (i: number) => string) {
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < count) {
        const start = next;
        next += 100;
        const events = Array.from({ length: Math.min(100, count - start) }, (_, j) => ({
          user_id: `u-${(start + j) % 200}`,
          event_name: name(start + j),
        }));
        await post(`${t.url}/v1/events/batch`, key, { events });
      }
    }),
  );
}

/** Runs wrk for the victim: one connection, `delayMs` between requests; latencies in milliseconds. */
async function wrk(url: string, key: string, body: unknown, delayMs: number, seconds: number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-wrk-'));
  const script = path.join(dir, 'victim.lua');
  fs.writeFileSync(
    script,
    `wrk.method = "POST"
wrk.body = ${JSON.stringify(JSON.stringify(body))}
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer ${key}"
function delay() return ${delayMs} end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %d %d %d %d\\n", summary.requests, summary.errors.status,
    summary.errors.timeout, latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max))
end
`,
  );
  const out = await new Promise<string>((resolve, reject) => {
    const p = spawn('wrk', ['-t1', '-c1', `-d${seconds}s`, '--timeout', '60s', '-s', script, url]);
    let text = '';
    p.stdout.on('data', (c: Buffer) => {
      text += c.toString();
    });
    p.on('error', reject);
    p.on('exit', () => resolve(text));
  });
  fs.rmSync(dir, { recursive: true, force: true });
  const m = /RESULT (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)/.exec(out);
  if (!m) throw new Error(`wrk gave no result:\n${out}`);
  const ms = (us: string) => Math.round(Number(us) / 100) / 10;
  return {
    requests: Number(m[1]),
    non_2xx: Number(m[2]),
    timeouts: Number(m[3]),
    p50_ms: ms(m[4]!),
    p95_ms: ms(m[5]!),
    p99_ms: ms(m[6]!),
    max_ms: ms(m[7]!),
  };
}

/** The attacker: loops the query from its REST keys and its MCP key until `until`. */
async function attack(t: Tally, appId: string, rest: string[], mcpKey: string, until: number) {
  const outcomes: Record<string, number> = {};
  const count = (what: string) => {
    outcomes[what] = (outcomes[what] ?? 0) + 1;
  };
  const pause = () => new Promise((r) => setTimeout(r, 100));
  const restLoop = async (key: string) => {
    while (Date.now() < until) {
      try {
        const res = await fetch(`${t.url}/v1/analytics/query`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ app_id: appId, query: ATTACK }),
          signal: AbortSignal.timeout(120_000),
        });
        const body = (await res.json()) as { code?: string; details?: { reason?: string } };
        const what = res.ok ? '200' : `${res.status} ${body.details?.reason ?? body.code}`;
        count(what);
        if (!res.ok && body.code !== 'QUERY_TIMEOUT') await pause();
      } catch (err) {
        count(`error ${(err as Error).name}`);
        await pause();
      }
    }
  };
  const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), {
    requestInit: { headers: { 'X-MCP-API-Key': mcpKey } },
  });
  const mcp = new Client({ name: 'tally-fairness-bench', version: '1.0.0' });
  await mcp.connect(transport);
  const mcpLoop = async () => {
    while (Date.now() < until) {
      try {
        const r = await mcp.callTool(
          { name: 'query_analytics', arguments: { app_id: appId, query: ATTACK } },
          undefined,
          {
            timeout: 120_000,
          },
        );
        const text = (r.content as { text: string }[])[0]?.text ?? '';
        const code = r.isError ? (/^[A-Z_]+/.exec(text)?.[0] ?? 'error') : '200';
        const reason = /"reason":"(\w+)"/.exec(text)?.[1];
        count(`mcp ${reason ?? code}`);
        if (r.isError && code !== 'QUERY_TIMEOUT') await pause();
      } catch (err) {
        // the SDK's StreamableHTTPError carries the HTTP status as its code (429: the MCP rate limit)
        count(`mcp ${(err as { code?: number }).code === 429 ? 'rate limited' : 'error'}`);
        await pause();
      }
    }
  };
  await Promise.all([...rest.flatMap((k) => [restLoop(k), restLoop(k)]), mcpLoop(), mcpLoop()]);
  await mcp.close();
  return outcomes;
}

export async function benchFairness(label: string, adminDatabaseUrl?: string) {
  const scratch = adminDatabaseUrl ? await scratchDatabase(adminDatabaseUrl) : undefined;
  const t = await startTally(scratch?.url);
  try {
    const attacker = await tenant(t, 'Attacker', ['rest', 'rest', 'mcp']);
    const victim = await tenant(t, 'Victim', ['rest']);
    await seed(t, attacker.keys[0]!, ATTACK_EVENTS, () => 'tick');
    await seed(t, victim.keys[0]!, 1_000, (i) => `step_${i % 5}`);
    const restartsBefore = t.restarts();
    const until = Date.now() + SECONDS * 1000;
    const [outcomes, sql, ingest] = await Promise.all([
      ATTACKING ? attack(t, attacker.appId, attacker.keys.slice(0, 2), attacker.keys[2]!, until) : {},
      wrk(`${t.url}/v1/analytics/query`, victim.keys[0]!, { app_id: victim.appId, query: VICTIM_SQL }, 1000, SECONDS),
      wrk(`${t.url}/v1/events`, victim.keys[0]!, { user_id: 'victim-user', event_name: 'victim_event' }, 100, SECONDS),
    ]);
    return {
      bench: 'fairness',
      label,
      root: ROOT,
      seconds: SECONDS,
      attacker_events: ATTACK_EVENTS,
      attacking: ATTACKING,
      victim_sql: sql,
      victim_ingest: ingest,
      embedded_restarts: t.restarts() - restartsBefore,
      attacker_outcomes: outcomes,
    };
  } finally {
    await t.stop();
    await scratch?.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchFairness('pglite (embedded)')));
  const pg = process.env.BENCH_DATABASE_URL;
  if (pg) console.log(JSON.stringify(await benchFairness('postgresql', pg)));
}
