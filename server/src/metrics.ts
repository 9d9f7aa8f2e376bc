// The metrics of one composition root, in Prometheus's text format (GET /metrics, http/ops.ts).
// Every root has its own prom-client registry (never the library's global one), so several roots in
// one process (the tests) count apart. Counters and histograms are updated where things happen (the
// HTTP pipeline, the event writer, the rate limiter, the sandbox, the job runner, MCP sessions,
// push attempts); gauges that describe a state (queue depths, pool use, open MCP sessions) are read
// when Prometheus scrapes, from the sources the root registers. Ground floor: imports nothing of Tally.
// docs/metrics.md lists every metric; docs/alerts.yml alerts on them.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** The label of requests that match no operation of the contract and no other known surface. */
export const UNMATCHED = 'unmatched';

/** How busy one connection pool is. */
export interface PoolUse {
  used: number;
  free: number;
  /** Callers waiting for a connection. */
  pending: number;
}

/** What the root reads when Prometheus scrapes; each may be absent (no job runner, no sandbox pool). */
export interface ScrapeSources {
  /** Jobs queued and not yet started, per queue (job name). */
  queueDepths?: () => Promise<Record<string, number>>;
  /** Connection pools by name (`main`, `sandbox`). */
  pools?: () => Record<string, PoolUse | null>;
  /** MCP sessions open (used within their idle time), across the database. */
  openMcpSessions?: () => Promise<number>;
  /** Events submitted to the event writer and not yet committed. */
  ingestQueue?: () => number;
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Reads a source; a failure (the database is down) leaves its gauge empty and is counted, never thrown. */
async function read<T>(metrics: Metrics, source: string, fn: (() => T | Promise<T>) | undefined): Promise<T | null> {
  if (!fn) return null;
  try {
    return await fn();
  } catch {
    metrics.scrapeErrors.inc({ source });
    return null;
  }
}

export class Metrics {
  readonly registry = new Registry();
  readonly sources: ScrapeSources = {};

  readonly httpRequests = new Counter({
    name: 'tally_http_requests_total',
    help: 'HTTP requests answered, by operation id (or mcp, ops, sdk, unmatched) and status code.',
    labelNames: ['operation', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'tally_http_request_duration_seconds',
    help: 'Time from receiving a request to the end of its response, by operation.',
    labelNames: ['operation'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });

  readonly ingestBatchEvents = new Histogram({
    name: 'tally_ingest_batch_events',
    help: 'Events per group commit of the event writer (the events of all requests written in one transaction).',
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
    registers: [this.registry],
  });
  readonly ingestCommitDuration = new Histogram({
    name: 'tally_ingest_commit_duration_seconds',
    help: 'Time to write and commit one transaction of the event writer.',
    buckets: SECONDS,
    registers: [this.registry],
  });
  readonly ingestEvents = new Counter({
    name: 'tally_ingest_events_total',
    help: 'Events committed by the event writer, by outcome (written; duplicate: an insert_id already stored).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly ingestRefusedFull = new Counter({
    name: 'tally_ingest_refused_full_total',
    help: 'Ingestion requests refused with 503 because the event writer already held its limit of events (INGEST_QUEUE_LIMIT).',
    registers: [this.registry],
  });
  readonly ingestWriteRetries = new Counter({
    name: 'tally_ingest_write_retries_total',
    help: 'Writes of the event writer that rolled back whole and ran again, by reason (changed: a user was erased, or written through the REST API, while its events were written; deadlock: with another kind of write).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly ingestGroupRetries = new Counter({
    name: 'tally_ingest_group_retries_total',
    help: 'Group commits that failed and were written again request by request.',
    registers: [this.registry],
  });

  readonly rateLimitRefusals = new Counter({
    name: 'tally_rate_limit_refusals_total',
    help: 'Requests refused with 429 by the per-minute rate limits, by limit class.',
    labelNames: ['class'] as const,
    registers: [this.registry],
  });

  readonly sandboxQueries = new Counter({
    name: 'tally_sandbox_queries_total',
    help: 'SQL queries sent to the sandbox (caller SQL and SQL Tally wrote), by organization and source.',
    labelNames: ['organization_id', 'source'] as const,
    registers: [this.registry],
  });
  readonly sandboxRefusals = new Counter({
    name: 'tally_sandbox_refusals_total',
    help: 'Sandbox queries refused, by organization and reason (rejected, concurrency, organization, cooldown).',
    labelNames: ['organization_id', 'reason'] as const,
    registers: [this.registry],
  });
  readonly sandboxTimeCapHits = new Counter({
    name: 'tally_sandbox_time_cap_hits_total',
    help: 'Sandbox queries stopped at their time limit, by organization.',
    labelNames: ['organization_id'] as const,
    registers: [this.registry],
  });

  readonly jobs = new Counter({
    name: 'tally_jobs_total',
    help: 'Background job runs finished, by job name and outcome (completed, failed).',
    labelNames: ['job', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly jobDuration = new Histogram({
    name: 'tally_job_duration_seconds',
    help: 'Time one background job run took, by job name.',
    labelNames: ['job'] as const,
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300],
    registers: [this.registry],
  });

  readonly mcpSessionsCreated = new Counter({
    name: 'tally_mcp_sessions_created_total',
    help: 'MCP sessions opened by initialize on this instance.',
    registers: [this.registry],
  });

  readonly pushSends = new Counter({
    name: 'tally_push_sends_total',
    help: 'Calls to push providers, by provider and outcome (sent, delivered, retry, failed).',
    labelNames: ['provider', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly scrapeErrors = new Counter({
    name: 'tally_metrics_source_errors_total',
    help: 'Scrape-time readings that failed (the gauge is left out of that scrape), by source.',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });

  constructor() {
    const metrics = this;
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'tally_ingest_queue_events',
      help: 'Events submitted to the event writer and not yet committed.',
      registers: [this.registry],
      async collect() {
        const n = await read(metrics, 'ingest_queue', metrics.sources.ingestQueue);
        if (n !== null) this.set(n);
      },
    });
    new Gauge({
      name: 'tally_job_queue_depth',
      help: 'Jobs queued and not yet started, by queue (job name); read at scrape time.',
      labelNames: ['queue'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        const depths = await read(metrics, 'job_queue', metrics.sources.queueDepths);
        for (const [queue, depth] of Object.entries(depths ?? {})) this.set({ queue }, depth);
      },
    });
    new Gauge({
      name: 'tally_mcp_sessions_open',
      help: 'MCP sessions open (used within the last 30 minutes), across every instance on the database.',
      registers: [this.registry],
      async collect() {
        const n = await read(metrics, 'mcp_sessions', metrics.sources.openMcpSessions);
        if (n !== null) this.set(n);
      },
    });
    this.poolGauges();
  }

  private poolGauges(): void {
    const each = async (fn: (pool: string, use: PoolUse) => void) => {
      const pools = await read(this, 'pools', this.sources.pools);
      for (const [pool, use] of Object.entries(pools ?? {})) if (use) fn(pool, use);
    };
    new Gauge({
      name: 'tally_db_pool_connections',
      help: 'Database connections of each pool (main, sandbox) by state (used, free); read at scrape time.',
      labelNames: ['pool', 'state'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        await each((pool, use) => {
          this.set({ pool, state: 'used' }, use.used);
          this.set({ pool, state: 'free' }, use.free);
        });
      },
    });
    new Gauge({
      name: 'tally_db_pool_pending_acquires',
      help: 'Callers waiting for a connection of each pool; read at scrape time.',
      labelNames: ['pool'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        await each((pool, use) => this.set({ pool }, use.pending));
      },
    });
  }

  /** The exposition: content type and text. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
