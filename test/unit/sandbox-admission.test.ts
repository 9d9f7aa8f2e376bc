// Sandbox admission (issue 25), by the order of events and a moved clock, never by elapsed time:
// per-key and per-organization lanes with their queues and 429 reasons, and the embedded
// cool-down after a query ran into the time cap (1 minute, doubling at each hit within an hour,
// at most 15 minutes, starting over after an hour without one).
import { describe, expect, it } from 'vitest';
import { RateLimitError } from '../../server/src/errors.js';
import { type Admitted, SandboxAdmission } from '../../server/src/sandbox/admission.js';

const MINUTE = 60_000;
/** Lets every promise chain that can move on do so (one turn of the event loop, not a timed wait). */
const settle = () => new Promise((r) => setImmediate(r));

/** A query that runs until released. */
function blocker() {
  let release!: () => void;
  const done = new Promise<void>((r) => {
    release = r;
  });
  return { release, run: () => done };
}

function refusal(err: unknown) {
  expect(err).toBeInstanceOf(RateLimitError);
  const e = err as RateLimitError;
  return { status: e.status, code: e.code, retryAfter: e.retryAfter, details: e.details };
}

describe('organization lanes', () => {
  it('gives one organization at most half the connections, queues 8 more, refuses the rest', async () => {
    const admission = new SandboxAdmission(5);
    expect(admission.perOrganization).toBe(2);
    const now = () => 0;
    // eleven keys of organization A, one query each
    const a = Array.from({ length: 11 }, (_, i) => ({ key: `a${i}`, organization: 'A', timeoutMs: 10_000, now }));
    const blocks = a.map(() => blocker());
    const started: string[] = [];
    const runs = a.map((q, i) =>
      admission
        .run(q, () => {
          started.push(q.key);
          return blocks[i]!.run();
        })
        .then(
          () => 'done',
          (err) => err,
        ),
    );
    await settle();
    expect(started).toEqual(['a0', 'a1']);
    // the eleventh is refused at once: 2 run and 8 wait
    const refused = refusal(await runs[10]);
    expect(refused).toMatchObject({
      status: 429,
      code: 'RATE_LIMIT_EXCEEDED',
      details: { reason: 'organization', running: 2, waiting: 8 },
    });
    expect(refused.retryAfter).toBeGreaterThanOrEqual(1);
    expect(refused.retryAfter).toBeLessThanOrEqual(10);
    // organization B is not held up
    let bRan = false;
    await admission.run({ key: 'b', organization: 'B', timeoutMs: 10_000, now }, async () => {
      bRan = true;
    });
    expect(bRan).toBe(true);
    // A's queue moves on as its queries end, in order
    blocks[0]!.release();
    await runs[0];
    await settle();
    expect(started).toEqual(['a0', 'a1', 'a2']);
    for (const b of blocks) b.release();
    expect(await Promise.all(runs.slice(0, 10))).toEqual(Array(10).fill('done'));
  });

  it('takes the one embedded connection in turn: one query per organization at a time', () => {
    expect(new SandboxAdmission(1).perOrganization).toBe(1);
  });

  it('keeps the per-key caps: 2 running and 8 waiting, then 429 with reason concurrency', async () => {
    const admission = new SandboxAdmission(5);
    const q: Admitted = { key: 'k', organization: 'O', timeoutMs: 5_000, now: () => 0 };
    const block = blocker();
    // key k: 2 pass the key lane, but its organization runs 2 at a time as well
    const runs = Array.from({ length: 11 }, () =>
      admission.run(q, block.run).then(
        () => 'done',
        (err) => err,
      ),
    );
    const refused = refusal(await runs[10]);
    expect(refused.details).toMatchObject({ reason: 'concurrency', running: 2, waiting: 8 });
    block.release();
    expect(await Promise.all(runs.slice(0, 10))).toEqual(Array(10).fill('done'));
  });
});

describe('cool-down after the embedded time cap', () => {
  it('refuses the organization for 1 minute with Retry-After, and no other organization', async () => {
    const admission = new SandboxAdmission(1);
    let t = Date.parse('2026-06-01T12:00:00Z');
    const now = () => t;
    const run = (organization: string) =>
      admission.run({ key: organization, organization, timeoutMs: 2_000, now }, async () => 'ran').catch((e) => e);
    expect(admission.capHit('A', t)).toBe(MINUTE);
    expect(refusal(await run('A'))).toMatchObject({ status: 429, retryAfter: 60, details: { reason: 'cooldown' } });
    expect(await run('B')).toBe('ran');
    t += 45_000;
    expect(refusal(await run('A')).retryAfter).toBe(15);
    t += 15_000;
    expect(await run('A')).toBe('ran');
  });

  it('doubles at each further hit within an hour, up to 15 minutes, and starts over after an hour', () => {
    const admission = new SandboxAdmission(1);
    let t = 0;
    const durations: number[] = [];
    for (let i = 0; i < 7; i++) {
      const d = admission.capHit('A', t);
      durations.push(d / MINUTE);
      t += d + 5 * MINUTE; // the next hit comes five minutes after the cool-down ends
    }
    expect(durations).toEqual([1, 2, 4, 8, 15, 15, 15]);
    t += 61 * MINUTE;
    expect(admission.capHit('A', t)).toBe(MINUTE);
  });

  it('refuses a query that was waiting when its organization was cooled down', async () => {
    const admission = new SandboxAdmission(1);
    const now = () => 1_000;
    const q: Admitted = { key: 'k1', organization: 'A', timeoutMs: 2_000, now };
    const first = blocker();
    const running = admission.run(q, first.run);
    const waiting = admission.run({ ...q, key: 'k2' }, async () => 'ran').catch((e) => e);
    await settle();
    admission.capHit('A', 1_000);
    first.release();
    await running;
    expect(refusal(await waiting).details).toMatchObject({ reason: 'cooldown' });
  });
});
