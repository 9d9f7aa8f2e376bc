// Retries and timeouts, as a wrapper around fetch. A call is repeated only when repeating it cannot
// do the work twice: reads (GET, HEAD); event writes, whose events then all carry an `insert_id`
// (the server stores an event once per insert_id); and the POSTs the contract declares with an
// `Idempotency-Key` header, which then always carry one (the server answers a repeated key with the
// first answer). Every other call is sent once, whatever the options say.
import { EVENT_POSTS, IDEMPOTENT_POSTS } from './contract.gen.js';

export interface RetryOptions {
  /** Attempts after the first one (default 3). */
  maxRetries?: number;
  /** First backoff step in milliseconds (default 500); each retry doubles it, with jitter. */
  baseDelay?: number;
  /**
   * Longest wait before a retry, in milliseconds (default 30 000). When the server asks for a
   * longer wait (`Retry-After`), its answer is returned instead of waiting.
   */
  maxDelay?: number;
  /** Called before each retry, with the wait about to start. */
  onRetry?: (info: RetryInfo) => void;
}

export interface RetryInfo {
  method: string;
  url: string;
  /** 1 for the first retry. */
  attempt: number;
  /** Milliseconds before the retry is sent. */
  delay: number;
  /** The status that caused the retry; absent after a network failure or a timeout. */
  status?: number;
  /** The network failure or timeout that caused the retry. */
  error?: unknown;
}

/** How a call may be repeated: 'once' calls never are. */
export type CallKind = 'read' | 'event' | 'idempotent' | 'once';

type ResolvedRetry = Required<Omit<RetryOptions, 'onRetry'>> & Pick<RetryOptions, 'onRetry'>;

interface Policy {
  /** null: send once. */
  retry: ResolvedRetry | null;
  /** Milliseconds each attempt may take; 0 for no limit. */
  timeout: number;
  /** Path of the base URL, removed before matching operation paths. */
  basePath: string;
  random: () => number;
}

const template = (path: string) => new RegExp(`^${path.replace(/\{[^}/]+\}/g, '[^/]+')}$`);
const idempotent = IDEMPOTENT_POSTS.map(template);
const events = Object.entries(EVENT_POSTS).map(([path, field]) => [template(path), field] as const);

export function callKind(method: string, path: string): CallKind {
  if (method === 'GET' || method === 'HEAD') return 'read';
  if (method !== 'POST') return 'once';
  if (events.some(([re]) => re.test(path))) return 'event';
  if (idempotent.some((re) => re.test(path))) return 'idempotent';
  return 'once';
}

export function resolveRetry(retry: boolean | RetryOptions | undefined): ResolvedRetry | null {
  if (!retry) return null;
  const o = retry === true ? {} : retry;
  return {
    maxRetries: Math.max(0, Math.floor(o.maxRetries ?? 3)),
    baseDelay: Math.max(0, o.baseDelay ?? 500),
    maxDelay: Math.max(0, o.maxDelay ?? 30_000),
    onRetry: o.onRetry,
  };
}

/** Milliseconds a `Retry-After` value asks for (delay-seconds or an HTTP-date), or undefined. */
export function retryAfterMs(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  if (!/^\s*[A-Za-z]{3}/.test(value)) return undefined; // HTTP-dates start with the day's name
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Exponential backoff with jitter: half the step, plus up to the other half at random. */
export function backoff(attempt: number, retry: ResolvedRetry, random = Math.random): number {
  const step = Math.min(retry.maxDelay, retry.baseDelay * 2 ** (attempt - 1));
  return step / 2 + random() * (step / 2);
}

function retryable(status: number, kind: CallKind, response: Response): boolean {
  if (status === 429 || (status >= 500 && status !== 501)) return true;
  // The first request with this Idempotency-Key is still running: ask again when told to.
  return status === 409 && kind === 'idempotent' && response.headers.has('Retry-After');
}

/** Gives every event without an `insert_id` one, so that a repeated send stores it once. */
export function withInsertIds(text: string, field: string): string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return text;
  }
  const fill = (event: unknown) => {
    if (event && typeof event === 'object' && !Array.isArray(event) && !('insert_id' in event)) {
      (event as Record<string, unknown>).insert_id = crypto.randomUUID();
    }
  };
  if (field === 'self') fill(body);
  else if (body && typeof body === 'object') {
    const list = (body as Record<string, unknown>)[field];
    if (Array.isArray(list)) list.forEach(fill);
  }
  return JSON.stringify(body);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const done = () => {
      signal.removeEventListener('abort', stop);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', stop, { once: true });
  });
}

/** Sends `request` with `send`, under the policy's timeout and, when allowed, its retries. */
export async function sendWithPolicy(
  request: Request,
  send: (request: Request) => Promise<Response>,
  policy: Policy,
): Promise<Response> {
  const url = new URL(request.url);
  const path = url.pathname.startsWith(policy.basePath) ? url.pathname.slice(policy.basePath.length) : url.pathname;
  const kind = policy.retry ? callKind(request.method, path || '/') : 'once';
  if (kind === 'once' && !policy.timeout) return send(request);

  const headers = new Headers(request.headers);
  let body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.text();
  const field = events.find(([re]) => re.test(path))?.[1];
  if (kind === 'event' && body !== undefined && field) body = withInsertIds(body, field);
  if (kind === 'idempotent' && !headers.has('Idempotency-Key')) headers.set('Idempotency-Key', crypto.randomUUID());

  const attempt = () => {
    const signal = policy.timeout
      ? AbortSignal.any([request.signal, AbortSignal.timeout(policy.timeout)])
      : request.signal;
    return send(new Request(request, { body, headers, signal }));
  };
  const retry = kind === 'once' ? null : policy.retry;
  for (let n = 1; ; n++) {
    let response: Response | undefined;
    let failure: unknown;
    try {
      response = await attempt();
    } catch (err) {
      if (request.signal.aborted || !retry || n > retry.maxRetries) throw err;
      failure = err;
    }
    if (response && (!retry || n > retry.maxRetries || !retryable(response.status, kind, response))) return response;
    const asked = retryAfterMs(response?.headers.get('Retry-After'));
    if (response && asked !== undefined && asked > retry!.maxDelay) return response;
    const delay = Math.max(asked ?? 0, backoff(n, retry!, policy.random));
    await response?.body?.cancel().catch(() => {});
    retry!.onRetry?.({
      method: request.method,
      url: request.url,
      attempt: n,
      delay,
      status: response?.status,
      error: failure,
    });
    await sleep(delay, request.signal);
  }
}

export type { Policy as RetryPolicy };
