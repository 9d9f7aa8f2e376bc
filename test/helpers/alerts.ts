// docs/alerts.yml read in tests: its rules, and the metric names each rule's expression uses
// (Tally's own and the process metrics), so that a renamed metric fails the test that checks them
// against a real scrape (test/e2e/metrics.test.ts).
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { Scrape } from './metrics.js';

export const ALERTS_FILE = fileURLToPath(new URL('../../docs/alerts.yml', import.meta.url));

export interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: { severity: string };
  annotations: { summary: string; description: string };
}

export interface AlertFile {
  groups: { name: string; rules: AlertRule[] }[];
}

export const readAlerts = (): AlertFile => parse(fs.readFileSync(ALERTS_FILE, 'utf8')) as AlertFile;

export const alertRules = (): AlertRule[] => readAlerts().groups.flatMap((g) => g.rules);

/** The metric names in a PromQL expression (Tally's, prom-client's process and Node.js ones). */
export function metricNamesIn(expr: string): string[] {
  return [...new Set(expr.match(/\b(tally|process|nodejs)_[a-z0-9_]+\b/g) ?? [])];
}

/** Every name a scrape offers to PromQL: each family, and a histogram's _bucket, _sum and _count series. */
export function namesExposed({ families }: Scrape): string[] {
  return families.flatMap((f) =>
    f.type === 'HISTOGRAM' || f.type === 'SUMMARY'
      ? [f.name, `${f.name}_bucket`, `${f.name}_sum`, `${f.name}_count`]
      : [f.name],
  );
}
