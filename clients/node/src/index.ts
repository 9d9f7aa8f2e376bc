// @tally/client: the typed Tally client. Everything under ./gen is generated from Tally's OpenAPI
// document by hey-api (`npm run generate`); this file only adds createTallyClient.
import { createClient, createConfig } from './gen/client/index.js';
import { TallySdk } from './gen/sdk.gen.js';

export type { Client } from './gen/client/index.js';
export { TallySdk } from './gen/sdk.gen.js';
export * from './gen/types.gen.js';

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
}

export type TallyClient = TallySdk;

/**
 * Creates a client whose methods are named after the operations of Tally's contract, for example
 * `eventsTrack`, `usersUpsert`, `adminAppsCreate`. Each returns `{ data, error, response }`.
 */
export function createTallyClient(options: TallyClientOptions): TallyClient {
  const client = createClient(
    createConfig({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      headers: options.headers,
      fetch: options.fetch,
      auth: (scheme) => (scheme.type === 'apiKey' ? options.mcpApiKey : (options.apiKey ?? options.adminToken)),
    }),
  );
  if (options.adminToken) {
    const adminToken = options.adminToken;
    // Admin operations share the bearer scheme with REST ones; they take the admin token.
    client.interceptors.request.use((request) => {
      if (new URL(request.url).pathname.startsWith('/admin/')) {
        request.headers.set('Authorization', `Bearer ${adminToken}`);
      }
      return request;
    });
  }
  return new TallySdk({ client });
}
