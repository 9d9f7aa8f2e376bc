// @tally/client: the typed Tally client. Everything under ./gen (and contract.gen.ts) is generated
// from Tally's OpenAPI document (`npm run generate`); the hand-written part is createTallyClient,
// which adds authentication, error envelopes (errors.ts), timeouts and safe retries (retry.ts) to
// hey-api's client through its options and interceptors.
import { toTallyError } from './errors.js';
import { createClient, createConfig } from './gen/client/index.js';
import { TallySdk } from './gen/sdk.gen.js';
import { type RetryOptions, resolveRetry, sendWithPolicy } from './retry.js';

export { KNOWN_ERROR_CODES, type KnownErrorCode } from './contract.gen.js';
export { type ClientErrorCode, isKnownErrorCode, type TallyError, type TallyErrorCode } from './errors.js';
export type { Client } from './gen/client/index.js';
export { TallySdk } from './gen/sdk.gen.js';
export * from './gen/types.gen.js';
export { callKind, type RetryInfo, type RetryOptions, retryAfterMs } from './retry.js';

/** Options every call also accepts, to override the client's. */
declare module './gen/client/types.gen.js' {
  interface Config {
    /**
     * Retry this call on 429, 5xx (except 501), network failures and timeouts, waiting as
     * `Retry-After` asks, when it is safe to repeat (see the README). `true` for the defaults.
     */
    retry?: boolean | RetryOptions;
    /** Milliseconds each attempt may take before it is abandoned (0: no limit). */
    timeout?: number;
  }
}

export interface TallyClientOptions {
  /** Where Tally is served, for example `https://tally.example.com` (no trailing `/v1`). */
  baseUrl: string;
  /** REST API key (`tk_live_...`) for the `/v1` operations. */
  apiKey?: string;
  /** MCP API key (`tk_mcp_...`) for the `/mcp` resource operations. */
  mcpApiKey?: string;
  /** Admin token (`tk_admin_...`) for the `/admin/v1` operations. */
  adminToken?: string;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** A fetch implementation (defaults to the global fetch). */
  fetch?: typeof fetch;
  /**
   * Off by default. `true` (or options) retries the calls that are safe to repeat: reads, event
   * writes (each event gets an `insert_id` if it has none) and the POSTs that take an
   * `Idempotency-Key` (one is generated for each call that does not set its own).
   */
  retry?: boolean | RetryOptions;
  /** Milliseconds each attempt may take (default: no limit). A call may also pass `signal`. */
  timeout?: number;
}

export type TallyClient = TallySdk;

/**
 * Creates a client whose methods are named after the operations of Tally's contract, for example
 * `eventsTrack`, `usersUpsert`, `adminAppsCreate`. Each returns `{ data, error, response }`.
 */
export function createTallyClient(options: TallyClientOptions): TallyClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const basePath = new URL(baseUrl).pathname.replace(/\/+$/, '');
  const client = createClient(
    createConfig({
      baseUrl,
      headers: options.headers,
      fetch: options.fetch,
      retry: options.retry,
      timeout: options.timeout,
      auth: (scheme) => (scheme.type === 'apiKey' ? options.mcpApiKey : (options.apiKey ?? options.adminToken)),
    }),
  );
  if (options.adminToken) {
    const adminToken = options.adminToken;
    // Admin operations share the bearer scheme with REST ones; they take the admin token.
    client.interceptors.request.use((request) => {
      if (new URL(request.url).pathname.startsWith(`${basePath}/admin/`)) {
        request.headers.set('Authorization', `Bearer ${adminToken}`);
      }
      return request;
    });
  }
  // The fetch of this one call, wrapped with the call's own (or the client's) retry and timeout.
  client.interceptors.request.use((request, opts) => {
    const send = opts.fetch ?? globalThis.fetch;
    const policy = { retry: resolveRetry(opts.retry), timeout: opts.timeout ?? 0, basePath, random: Math.random };
    opts.fetch = ((req: Request) => sendWithPolicy(req, (r) => send(r), policy)) as typeof fetch;
    return request;
  });
  client.interceptors.error.use(toTallyError);
  return new TallySdk({ client });
}
