// Who may run a sandbox query now, so that no tenant can take the sandbox from the others:
//  - per key: at most 2 queries run and 8 wait;
//  - per organization (all its keys, REST and MCP, and Tally's own queries for its apps): at most
//    half the sandbox's connections (2 of PostgreSQL's 5; the one embedded connection is taken in
//    turn), with a queue of its own of 8; beyond it 429 with reason "organization";
//  - embedded mode: an organization whose query ran into the time cap (which restarts the shared
//    database) is cooled down: 1 minute, doubling at each further hit within an hour, at most 15.
// These caps protect the server and stay on when rate limits are off. One admission per composition
// root, built with its executor (sandbox/open.ts); cool-downs run on the service clock.
import { RateLimitError } from '../errors.js';

export const MAX_RUNNING_PER_KEY = 2;
export const MAX_WAITING_PER_KEY = 8;
export const MAX_WAITING_PER_ORGANIZATION = 8;
export const COOLDOWN_FIRST_MS = 60_000;
export const COOLDOWN_MAX_MS = 15 * 60_000;
/** A hit this long after the previous one starts the cool-downs over at one minute. */
export const COOLDOWN_MEMORY_MS = 60 * 60_000;

interface Lane {
  /** When each running query reaches its time limit (monotonic milliseconds). */
  deadlines: number[];
  waiting: { timeoutMs: number; start: (deadline: number) => void }[];
}

interface Cooldown {
  until: number;
  strikes: number;
  lastHit: number;
}

export interface Admitted {
  /** The API key (or app) the query counts against. */
  key: string;
  organization: string;
  timeoutMs: number;
  /** The service clock's now, in milliseconds. */
  now: () => number;
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export class SandboxAdmission {
  private readonly keys = new Map<string, Lane>();
  private readonly organizations = new Map<string, Lane>();
  private readonly cooldowns = new Map<string, Cooldown>();
  /** Queries of one organization that may run at once. */
  readonly perOrganization: number;

  constructor(slots: number) {
    this.perOrganization = Math.max(1, Math.floor(slots / 2));
  }

  async run<T>(q: Admitted, fn: () => Promise<T>): Promise<T> {
    this.refuseIfCooling(q.organization, q.now());
    const leaveKey = await this.enter(this.keys, q.key, MAX_RUNNING_PER_KEY, MAX_WAITING_PER_KEY, q, (lane, wait) => {
      return new RateLimitError(
        `Too many SQL queries at once from this key: ${lane.deadlines.length} are running and ${lane.waiting.length} are waiting. Wait for some to finish.`,
        wait,
        { reason: 'concurrency', running: lane.deadlines.length, waiting: lane.waiting.length },
      );
    });
    try {
      const leaveOrganization = await this.enter(
        this.organizations,
        q.organization,
        this.perOrganization,
        MAX_WAITING_PER_ORGANIZATION,
        q,
        (lane, wait) =>
          new RateLimitError(
            `Too many SQL queries at once from this organization: ${lane.deadlines.length} are running and ${lane.waiting.length} are waiting, the most one organization may have so that others are not held up. Wait for some to finish.`,
            wait,
            { reason: 'organization', running: lane.deadlines.length, waiting: lane.waiting.length },
          ),
      );
      try {
        // A cool-down may have started while this query waited.
        this.refuseIfCooling(q.organization, q.now());
        return await fn();
      } finally {
        leaveOrganization();
      }
    } finally {
      leaveKey();
    }
  }

  /**
   * Embedded mode: a query of this organization ran into the time cap. Starts its cool-down and
   * returns how long it lasts.
   */
  capHit(organization: string, now: number): number {
    const previous = this.cooldowns.get(organization);
    const strikes = previous && now - previous.lastHit < COOLDOWN_MEMORY_MS ? previous.strikes + 1 : 0;
    const duration = Math.min(COOLDOWN_MAX_MS, COOLDOWN_FIRST_MS * 2 ** strikes);
    this.cooldowns.set(organization, { until: now + duration, strikes, lastHit: now });
    for (const [org, c] of this.cooldowns) {
      if (now - c.lastHit >= COOLDOWN_MEMORY_MS && now >= c.until) this.cooldowns.delete(org);
    }
    return duration;
  }

  private refuseIfCooling(organization: string, now: number): void {
    const c = this.cooldowns.get(organization);
    if (!c || now >= c.until) return;
    const wait = seconds(c.until - now);
    throw new RateLimitError(
      `A SQL query of this organization ran past the time limit of the embedded database, which had to restart for every tenant, so this organization's SQL queries are paused for ${Math.round((c.until - c.lastHit) / 60_000)} minute(s). Try again in ${wait} seconds with a narrower query (a time range, an event name), or run Tally on PostgreSQL.`,
      wait,
      { reason: 'cooldown' },
    );
  }

  /** Takes a running slot in `key`'s lane, waiting in its queue if it must; returns how to leave. */
  private async enter(
    lanes: Map<string, Lane>,
    key: string,
    maxRunning: number,
    maxWaiting: number,
    q: Admitted,
    refuse: (lane: Lane, retryAfter: number) => RateLimitError,
  ): Promise<() => void> {
    let lane = lanes.get(key);
    if (!lane) {
      lane = { deadlines: [], waiting: [] };
      lanes.set(key, lane);
    }
    let mine: number;
    if (lane.deadlines.length >= maxRunning) {
      if (lane.waiting.length >= maxWaiting) {
        throw refuse(lane, seconds(Math.min(...lane.deadlines) - performance.now()));
      }
      mine = await new Promise<number>((start) => lane!.waiting.push({ timeoutMs: q.timeoutMs, start }));
    } else {
      mine = performance.now() + q.timeoutMs;
      lane.deadlines.push(mine);
    }
    const l = lane;
    return () => {
      l.deadlines.splice(l.deadlines.indexOf(mine), 1);
      const next = l.waiting.shift();
      if (next) {
        // the slot passes to the next waiting query
        const deadline = performance.now() + next.timeoutMs;
        l.deadlines.push(deadline);
        next.start(deadline);
      } else if (l.deadlines.length === 0) lanes.delete(key);
    };
  }
}
