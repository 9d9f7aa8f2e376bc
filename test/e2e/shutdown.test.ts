// Graceful shutdown of a Tally process (`npm start`), on the embedded database and on PostgreSQL:
// SIGTERM with 200 event requests in flight (single events and batches, each certainly being served:
// the server had read its headers) answers every one with success and Connection: close, refuses
// new connections, stores every acknowledged event, keeps the MCP session for the next instance,
// and exits 0; a request still unfinished when the grace period ends is cut and the process still
// exits 0; a second signal exits at once, non-zero.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HeldRequest, holdRequest, untilRefused } from '../helpers/held-requests.js';
import { initializeRequest, mcpPost } from '../helpers/mcp-client.js';
import { type ProcessDatabase, processDatabase, storedEvents } from '../helpers/process-database.js';
import { type ServerProcess, startServerProcess } from '../helpers/process-server.js';

let db: ProcessDatabase;
const running: ServerProcess[] = [];

beforeAll(async () => {
  db = await processDatabase();
}, 60_000);
afterAll(async () => {
  for (const p of running) await p.stop('SIGKILL');
  await db?.close();
});

async function start(env: Record<string, string> = {}): Promise<ServerProcess> {
  const proc = await startServerProcess({ ...db.env, LOG_LEVEL: 'info', ...env });
  running.push(proc);
  return proc;
}

/**
 * The server's exit code, once its output has all been read too ('close' comes after the last of
 * it; 'exit' may come first, and a test that then reads the output may miss its last lines).
 */
const exitOf = (proc: ServerProcess) =>
  new Promise<number | null>((resolve) => {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) resolve(proc.child.exitCode);
    else proc.child.once('close', (code) => resolve(code));
  });

/** Request `i`: every fourth one a batch of 5 events, the others a single event; its insert_ids. */
function eventRequest(i: number, prefix: string, name: string) {
  const event = (j: number) => ({ event_name: name, user_id: `u-${i % 9}`, insert_id: `${prefix}-${i}-${j}` });
  if (i % 4 === 0) {
    const events = [0, 1, 2, 3, 4].map(event);
    return { path: '/v1/events/batch', body: { events }, ids: events.map((e) => e.insert_id) };
  }
  const single = event(0);
  return { path: '/v1/events', body: single, ids: [single.insert_id] };
}

async function mcpSession(url: string): Promise<string> {
  const res = await mcpPost(url, db.tenant.mcpKey, initializeRequest());
  expect(res.status).toBe(200);
  const id = res.headers.get('mcp-session-id');
  expect(id).toBeTruthy();
  const ack = await mcpPost(
    url,
    db.tenant.mcpKey,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    {
      'mcp-session-id': id!,
    },
  );
  expect(ack.status).toBe(202);
  return id!;
}

describe('graceful shutdown of a server process', () => {
  it('answers 200 requests in flight at SIGTERM, refuses new connections, stores every event, exits 0', async () => {
    const proc = await start();
    const session = await mcpSession(proc.url);
    const auth = { authorization: `Bearer ${db.tenant.apiKey}` };
    const requests = Array.from({ length: 200 }, (_, i) => eventRequest(i, 'sigterm', 'at_sigterm'));
    const held: HeldRequest[] = await Promise.all(
      requests.map((r) => holdRequest(proc.url, r.path, auth, JSON.stringify(r.body))),
    );
    const exited = exitOf(proc);
    proc.child.kill('SIGTERM');
    expect(await untilRefused(proc.url)).toBe(true); // the listener is closed: a new connection is refused
    const answers = await Promise.all(held.map((h) => h.finish()));
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    expect(answers.every((a) => a.connection === 'close')).toBe(true);
    expect(await exited).toBe(0);
    const log = proc.output();
    for (const step of [
      'shutdown: SIGTERM received',
      'waiting for 200 requests in flight',
      'every request answered',
      'job runner stopped',
      'every accepted event is committed',
      'database closed',
      'shutdown: complete',
    ]) {
      expect(log).toContain(step);
    }

    // the next instance serves the MCP session opened on the stopped one
    const next = await start();
    const listed = await mcpPost(
      next.url,
      db.tenant.mcpKey,
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      {
        'mcp-session-id': session,
      },
    );
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { result: { tools: unknown[] } }).result.tools.length).toBeGreaterThan(0);
    const nextExit = exitOf(next);
    next.child.kill('SIGTERM');
    expect(await nextExit).toBe(0);

    const acknowledged = requests.flatMap((r) => r.ids);
    const stored = await db.read((d) => storedEvents(d, db.tenant.appId, 'sigterm-', 'at_sigterm'));
    expect(acknowledged.filter((id) => !stored.insertIds.has(id))).toEqual([]);
    expect(stored.insertIds.size).toBe(acknowledged.length);
    expect(stored.events).toBe(acknowledged.length);
  }, 180_000);

  it('closes a request still unfinished when the grace period ends, and still exits 0', async () => {
    const proc = await start({ SHUTDOWN_GRACE_SECONDS: '2' });
    const auth = { authorization: `Bearer ${db.tenant.apiKey}` };
    const r = eventRequest(1, 'grace', 'at_grace');
    const held = await holdRequest(proc.url, r.path, auth, JSON.stringify(r.body));
    const exited = exitOf(proc);
    proc.child.kill('SIGTERM');
    expect(await held.outcome).toBeInstanceOf(Error); // its connection closed, never answered
    expect(await exited).toBe(0);
    expect(proc.output()).toContain('closing the connections still open after 2000 ms');
  }, 120_000);

  it('exits at once, non-zero, on a second signal', async () => {
    const proc = await start({ SHUTDOWN_GRACE_SECONDS: '600' });
    const auth = { authorization: `Bearer ${db.tenant.apiKey}` };
    const r = eventRequest(1, 'twice', 'at_twice');
    const held = await holdRequest(proc.url, r.path, auth, JSON.stringify(r.body));
    const exited = exitOf(proc);
    proc.child.kill('SIGTERM');
    expect(await untilRefused(proc.url)).toBe(true); // shutting down, waiting on the held request
    proc.child.kill('SIGTERM');
    // without the second signal it would wait up to 600 s for the held request
    const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 30_000))]);
    expect(code).toBe(143);
    expect(proc.output()).toContain('second signal, exiting at once');
    expect(await held.outcome).toBeInstanceOf(Error);
  }, 120_000);
});
