// docs/alerts.yml: valid YAML in Prometheus's rule-file shape, each rule complete (alert, expr, for,
// severity, summary and description) and naming Tally metrics. That those names are the ones the
// server really exposes is checked against a scrape in test/e2e/metrics.test.ts.
import { describe, expect, it } from 'vitest';
import { alertRules, metricNamesIn, readAlerts } from '../helpers/alerts.js';

describe('docs/alerts.yml', () => {
  it('is a Prometheus rule file of named groups', () => {
    const file = readAlerts();
    expect(Object.keys(file)).toEqual(['groups']);
    expect(file.groups.length).toBeGreaterThan(0);
    for (const group of file.groups) {
      expect(group.name).toMatch(/^[a-z][a-z0-9-]*$/);
      expect(group.rules.length).toBeGreaterThan(0);
    }
  });

  it('gives every rule a name, expression, duration, severity, summary and description', () => {
    const rules = alertRules();
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
    for (const rule of rules) {
      expect(Object.keys(rule).sort(), rule.alert).toEqual(['alert', 'annotations', 'expr', 'for', 'labels']);
      expect(rule.alert).toMatch(/^Tally[A-Z][A-Za-z0-9]+$/);
      expect(typeof rule.expr).toBe('string');
      expect(rule.for).toMatch(/^\d+[smh]$/);
      expect(['info', 'warning', 'critical']).toContain(rule.labels.severity);
      expect(rule.annotations.summary.trim().length, rule.alert).toBeGreaterThan(10);
      expect(rule.annotations.description.trim().length, rule.alert).toBeGreaterThan(30);
      // balanced brackets: a truncated expression fails here rather than in Prometheus
      for (const [open, close] of ['()', '[]', '{}']) {
        expect(rule.expr.split(open!).length, `${rule.alert} ${open}${close}`).toBe(rule.expr.split(close!).length);
      }
    }
  });

  it('covers ingestion, the sandbox time cap, job queues, push failures and 5xx answers', () => {
    const used = new Set(alertRules().flatMap((r) => metricNamesIn(r.expr)));
    for (const name of [
      'tally_ingest_commit_duration_seconds_bucket',
      'tally_ingest_queue_events',
      'tally_sandbox_time_cap_hits_total',
      'tally_job_queue_depth',
      'tally_push_sends_total',
      'tally_http_requests_total',
    ]) {
      expect(used, name).toContain(name);
    }
    expect(alertRules().some((r) => r.expr.includes('status=~"5.."'))).toBe(true);
  });
});
