// kill -9 under load: several clients send events (single and batches, each with insert_ids) to a
// Tally process, which is killed with SIGKILL at a random moment, then started again on the same
// database; every event whose request was acknowledged (2xx) must be stored, exactly once. Events
// of requests cut by the kill may be stored too (committed, answer lost): a client retries them
// with the same insert_id. Runs on PostgreSQL (CI's PostgreSQL pass) and on the embedded database,
// whose commits reach the data directory's files before they are acknowledged (docs/durability.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProcessDatabase, processDatabase, storedEvents } from '../helpers/process-database.js';
import { type ServerProcess, startServerProcess } from '../helpers/process-server.js';

const CLIENTS = 6;
const BATCH = 10;

let db: ProcessDatabase;
const running: ServerProcess[] = [];

beforeAll(async () => {
  db = await processDatabase();
}, 60_000);
afterAll(async () => {
  for (const p of running) await p.stop('SIGKILL');
  await db?.close();
});

/** One client: requests one after another until one fails (the process is gone); returns the acknowledged insert_ids. */
async function client(url: string, c: number, acknowledged: string[], stopped: () => boolean): Promise<void> {
  for (let k = 0; !stopped(); k++) {
    const event = (j: number) => ({
      event_name: 'under_load',
      user_id: `u-${c}-${k % 5}`,
      insert_id: `crash-${c}-${k}-${j}`,
    });
    const batch = k % 3 === 0;
    const events = batch ? Array.from({ length: BATCH }, (_, j) => event(j)) : [event(0)];
    try {
      const res = await fetch(`${url}${batch ? '/v1/events/batch' : '/v1/events'}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${db.tenant.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(batch ? { events } : events[0]),
        signal: AbortSignal.timeout(20_000),
      });
      await res.arrayBuffer();
      if (res.ok) acknowledged.push(...events.map((e) => e.insert_id));
    } catch {
      return; // refused or reset: the process was killed
    }
  }
}

describe('a server process killed with SIGKILL under load', () => {
  it('keeps every acknowledged event', async () => {
    const proc = await startServerProcess(db.env);
    running.push(proc);
    const acknowledged: string[] = [];
    let killed = false;
    const load = Promise.all(
      Array.from({ length: CLIENTS }, (_, c) => client(proc.url, c, acknowledged, () => killed)),
    );
    // a random moment once the load runs: after the first acknowledgement, 0.5 to 3 s later
    while (acknowledged.length === 0) await new Promise((r) => setTimeout(r, 20));
    const delay = 500 + Math.floor(Math.random() * 2_500);
    await new Promise((r) => setTimeout(r, delay));
    await proc.stop('SIGKILL');
    killed = true;
    await load;

    const again = await startServerProcess(db.env); // recovery on the same database
    running.push(again);
    const after = await fetch(`${again.url}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${db.tenant.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ event_name: 'after_restart', user_id: 'u-after' }),
    });
    expect(after.status).toBe(200);
    await again.stop('SIGTERM');
    expect(again.child.exitCode).toBe(0);

    const stored = await db.read((d) => storedEvents(d, db.tenant.appId, 'crash-', 'under_load'));
    const lost = acknowledged.filter((id) => !stored.insertIds.has(id));
    console.info(
      `kill -9 on ${db.kind} after ${delay} ms of load: ${acknowledged.length} events acknowledged, ${stored.insertIds.size} stored, ${lost.length} acknowledged but lost`,
    );
    expect(acknowledged.length).toBeGreaterThan(0);
    expect(lost).toEqual([]);
    expect(stored.events).toBe(stored.insertIds.size); // each stored event once, with its insert_id
  }, 120_000);
});
