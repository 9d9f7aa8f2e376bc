// The job runner's database adapter (storage/job-queue.ts): pg-boss marks a job completed or
// failed without waiting for the statement, so when the database is away at that moment the
// adapter tries once more and then gives up with a warning instead of rejecting (a rejection no one
// awaits ends the process). Every other statement rejects as it should.
import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import { isJobOutcome, jobQueueDatabase } from '../../server/src/storage/job-queue.js';

const plans = createRequire(import.meta.url)('pg-boss/src/plans.js') as Record<string, (schema: string) => string>;

/** A knex stand-in whose connection fails the first `failures` queries. */
function flakyKnex(failures: number) {
  let calls = 0;
  const conn = {
    query: async () => {
      calls++;
      if (calls <= failures) throw new Error('Connection terminated: the embedded database restarted');
      return { rows: [{ count: '1' }] };
    },
  };
  const knex = { client: { acquireConnection: async () => conn, releaseConnection: async () => {} } };
  return { knex: knex as unknown as Knex, calls: () => calls };
}

describe('job queue adapter', () => {
  it("recognises pg-boss's completion and failure by id, and nothing else", () => {
    expect(isJobOutcome(plans.completeJobs!('tally_jobs'))).toBe(true);
    expect(isJobOutcome(plans.failJobsById!('tally_jobs'))).toBe(true);
    for (const other of ['cancelJobs', 'resumeJobs', 'deleteJobs', 'retryJobs', 'failJobsByTimeout', 'insertJob']) {
      expect(isJobOutcome(plans[other]!('tally_jobs')), other).toBe(false);
    }
  });

  it('tries a completion again once when the database was away', async () => {
    const { knex, calls } = flakyKnex(1);
    const warned: unknown[] = [];
    const db = jobQueueDatabase(knex, (err) => warned.push(err));
    await expect(db.executeSql(plans.completeJobs!('tally_jobs'), ['q', ['id'], null])).resolves.toEqual({
      rows: [{ count: '1' }],
    });
    expect(calls()).toBe(2);
    expect(warned).toEqual([]);
  });

  it('gives a completion up with a warning when the database stays away, without rejecting', async () => {
    const { knex, calls } = flakyKnex(5);
    const warned: unknown[] = [];
    const db = jobQueueDatabase(knex, (err) => warned.push(err));
    await expect(db.executeSql(plans.failJobsById!('tally_jobs'), ['q', ['id'], null])).resolves.toEqual({
      rows: [{ count: '0' }],
    });
    expect(calls()).toBe(2);
    expect(warned).toHaveLength(1);
  });

  it('rejects any other statement at once', async () => {
    const { knex, calls } = flakyKnex(1);
    const db = jobQueueDatabase(knex, () => {});
    await expect(db.executeSql(plans.cancelJobs!('tally_jobs'), ['q', ['id']])).rejects.toThrow(/terminated/);
    expect(calls()).toBe(1);
  });
});
