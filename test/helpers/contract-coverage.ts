// The contract coverage of a test run, checked once every test file has run (global-setup.ts):
// every operation of the document, with each status it documents, must have been answered at
// least once by a test server, as contract-observer.ts recorded it; 429, 500 and 503 come from
// their own tests (rate limits, failures, outages), so each must be seen on some operation rather
// than on all. Any answer that broke the document fails the run too. The check applies to a run
// of the whole suite; a run of some files (or some tests) only says where its summary is.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { listOperations, loadContract } from '../../server/src/contract.js';
import type { Observation } from './contract-observer.js';

/** Statuses that one test of their own may show, on any operation. */
export const SHOWN_ONCE = new Set([429, 500, 503]);

export interface CoverageReport {
  /** `operationId status` never answered. */
  missing: string[];
  /** `operationId status: why`, for answers that broke the document. */
  violations: string[];
  observed: number;
  documented: number;
}

/** Compares the document with a run's observation files. */
export function coverage(dir: string): CoverageReport {
  const seen = new Set<string>();
  const violations = new Set<string>();
  for (const name of fs.readdirSync(dir).filter((f) => f.endsWith('.ndjson'))) {
    for (const line of fs.readFileSync(path.join(dir, name), 'utf8').split('\n')) {
      if (!line) continue;
      const o = JSON.parse(line) as Observation;
      if (o.violation) violations.add(`${o.operationId} ${o.status}: ${o.violation}`);
      else seen.add(`${o.operationId} ${o.status}`);
    }
  }
  const { doc } = loadContract();
  const shownAnywhere = new Set([...seen].map((s) => Number(s.split(' ')[1])));
  const missing: string[] = [];
  let documented = 0;
  for (const op of listOperations(doc)) {
    const responses = (doc.paths[op.path]![op.method.toLowerCase()] as { responses: Record<string, unknown> })
      .responses;
    for (const status of Object.keys(responses)) {
      documented++;
      const key = `${op.operationId} ${status}`;
      if (seen.has(key)) continue;
      if (SHOWN_ONCE.has(Number(status)) && shownAnywhere.has(Number(status))) continue;
      missing.push(key);
    }
  }
  return { missing, violations: [...violations].sort(), observed: seen.size, documented };
}

/**
 * Makes the run's folder; the returned function checks the run and removes the folder.
 * CONTRACT_RUN_DIR names a folder to keep instead, so that runs of a few files add up.
 */
export function startContractRun(project: TestProject): { dir: string; finish: () => Promise<void> } {
  const kept = process.env.CONTRACT_RUN_DIR;
  if (kept) fs.mkdirSync(kept, { recursive: true });
  const dir = kept ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tally-contract-'));
  project.provide('contractRun', dir);
  return {
    dir,
    async finish() {
      try {
        await report(project, dir);
      } finally {
        if (!kept) fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

async function report(project: TestProject, dir: string): Promise<void> {
  const result = coverage(dir);
  const ran = project.vitest.state.getFiles().length;
  const all = (await project.globTestFiles()).testFiles.length;
  // A Prism run (vitest.prism.config.ts) leaves some files out: its coverage is the full run's job.
  const whole = ran === all && !project.config.testNamePattern && process.env.TEST_PRISM !== '1';
  const lines = [
    `contract coverage: ${result.documented - result.missing.length} of ${result.documented} documented answers seen` +
      `, ${result.violations.length} answers that break the document`,
    ...result.violations.map((v) => `  violation: ${v}`),
    ...(whole || process.env.CONTRACT_COVERAGE === 'list' ? result.missing.map((m) => `  never seen: ${m}`) : []),
  ];
  // Vitest reports a teardown that throws but still exits 0: the exit code is set here instead.
  if (result.violations.length > 0 || (whole && result.missing.length > 0)) {
    console.error(lines.join('\n'));
    process.exitCode = 1;
  } else if (whole || process.env.CONTRACT_COVERAGE) {
    console.log(lines.join('\n'));
  }
}
