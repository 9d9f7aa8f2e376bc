// Who may call /mcp from a web page, and under which host name: a foreign Origin is 403 on the
// JSON-RPC endpoint (JSON-RPC error body) and on the resource GETs (our error envelope); when the
// server listens on loopback a foreign Host is 403 too (DNS rebinding), whatever X-Forwarded-Host
// says; requests without Origin, loopback origins on our port, PUBLIC_BASE_URL's origin and
// MCP_ALLOWED_ORIGINS are served. And the MCP key as Authorization: Bearer, never crossing with
// REST keys.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/src/config.js';
import { hostAllowed, listensOnLoopback, originAllowed } from '../../server/src/http/mcp-origin.js';
import { connectMcp, initializeRequest } from '../helpers/mcp-client.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;
let port: number;

/** A raw HTTP request, so that Host can be set (fetch will not). */
function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: unknown }) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Record<string, unknown> }>(
    (resolve, reject) => {
      const body = options.body === undefined ? undefined : JSON.stringify(options.body);
      const req = http.request(
        url,
        {
          method: options.method ?? (body ? 'POST' : 'GET'),
          headers: {
            ...(body ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } : {}),
            ...options.headers,
          },
        },
        (res) => {
          let text = '';
          res.on('data', (d) => {
            text += d;
          });
          res.on('end', () =>
            resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text || '{}') }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    },
  );
}

const initialize = (headers: Record<string, string>, url = server.url) =>
  send(`${url}/mcp`, { body: initializeRequest(), headers: { 'X-MCP-API-Key': tenant.mcpKey, ...headers } });

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  port = Number(new URL(server.url).port);
}, 60_000);
afterAll(() => server?.close());

describe('DNS rebinding and foreign origins', () => {
  it('refuses Host: evil.example.com with Origin: http://evil.example.com with 403 and a JSON-RPC error', async () => {
    const res = await initialize({ Host: 'evil.example.com', Origin: 'http://evil.example.com' });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, data: { code: 'ORIGIN_NOT_ALLOWED', reason: 'host' } },
    });
    expect(await server.db.knex('mcp_sessions').where({ organization_id: tenant.organization.id })).toHaveLength(0);
  });

  it('refuses a foreign Origin on our own host, and a foreign Host without Origin', async () => {
    const origin = await initialize({ Origin: 'http://evil.example.com' });
    expect(origin.status).toBe(403);
    expect(origin.body).toMatchObject({ error: { data: { reason: 'origin', origin: 'http://evil.example.com' } } });
    const host = await initialize({ Host: `evil.example.com:${port}` });
    expect(host.status).toBe(403);
    // X-Forwarded-Host is never taken for our own name
    const forwarded = await initialize({
      Origin: 'http://evil.example.com',
      'X-Forwarded-Host': 'evil.example.com',
      'X-Forwarded-Proto': 'http',
    });
    expect(forwarded.status).toBe(403);
    for (const o of [
      'null',
      'http://localhost',
      `http://localhost:${port + 1}`,
      `http://127.0.0.2:${port}`,
      'garbage',
    ]) {
      expect((await initialize({ Origin: o })).status, o).toBe(403);
    }
  });

  it('refuses the resource GETs the same way, with the error envelope', async () => {
    const res = await send(`${server.url}/mcp/resources`, {
      headers: { 'X-MCP-API-Key': tenant.mcpKey, Origin: 'http://evil.example.com' },
    });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ success: false, code: 'ORIGIN_NOT_ALLOWED', details: { reason: 'origin' } });
    const rebound = await send(`${server.url}/mcp/auth`, {
      headers: { 'X-MCP-API-Key': tenant.mcpKey, Host: 'evil.example.com' },
    });
    expect(rebound.status).toBe(403);
  });

  it('serves requests without Origin, and loopback origins on our port', async () => {
    for (const origin of [undefined, `http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]) {
      const res = await initialize(origin ? { Origin: origin } : {});
      expect(res.status, origin).toBe(200);
    }
    const { client } = await connectMcp(server.url, tenant.mcpKey, { Origin: `http://localhost:${port}` });
    expect((await client.listTools()).tools.length).toBeGreaterThan(5);
    await client.close();
    const resources = await send(`${server.url}/mcp/resources`, {
      headers: { 'X-MCP-API-Key': tenant.mcpKey, Host: `localhost:${port}` },
    });
    expect(resources.status).toBe(200);
  });

  it('serves MCP_ALLOWED_ORIGINS, and with PUBLIC_BASE_URL its origin and host instead of loopback origins', async () => {
    const configured = await startTestServer(
      {
        PUBLIC_BASE_URL: 'https://tally.example.com/base',
        MCP_ALLOWED_ORIGINS: 'http://127.0.0.1:6274, https://ai.example.com',
      },
      { database: server.db },
    );
    try {
      const cport = Number(new URL(configured.url).port);
      const at = (headers: Record<string, string>) => initialize(headers, configured.url);
      expect((await at({ Origin: 'https://tally.example.com' })).status).toBe(200);
      expect((await at({ Origin: 'http://127.0.0.1:6274' })).status).toBe(200);
      expect((await at({ Origin: 'https://ai.example.com' })).status).toBe(200);
      expect((await at({ Origin: 'https://ai.example.com:444' })).status).toBe(403);
      expect((await at({ Origin: `http://127.0.0.1:${cport}` })).status).toBe(403);
      // behind a proxy on the same machine: the configured public host is ours
      expect((await at({ Host: 'tally.example.com', Origin: 'https://tally.example.com' })).status).toBe(200);
      expect((await at({ Host: 'evil.example.com', Origin: 'https://tally.example.com' })).status).toBe(403);
    } finally {
      await configured.close();
    }
  });
});

describe('the rules', () => {
  const config = { host: '127.0.0.1', publicBaseUrl: undefined, mcpAllowedOrigins: [] as string[] };
  it('knows loopback listeners', () => {
    for (const host of ['127.0.0.1', '127.0.0.5', '::1', '[::1]', 'localhost']) {
      expect(listensOnLoopback({ host }), host).toBe(true);
    }
    for (const host of ['0.0.0.0', '::', '10.0.0.1', 'tally.example.com'])
      expect(listensOnLoopback({ host }), host).toBe(false);
  });

  it('compares whole origins, normalised', () => {
    expect(originAllowed(config, 'HTTP://LOCALHOST:3000', 3000)).toBe(true);
    expect(originAllowed(config, 'http://localhost:3000/', 3000)).toBe(true);
    expect(originAllowed(config, 'http://localhost:3000.evil.com', 3000)).toBe(false);
    expect(originAllowed(config, 'http://localhost.evil.com:3000', 3000)).toBe(false);
    expect(originAllowed({ ...config, publicBaseUrl: 'https://t.example.com' }, 'https://t.example.com:443', 1)).toBe(
      true,
    );
  });

  it('lets any Host through when not listening on loopback, and only loopback names otherwise', () => {
    expect(hostAllowed({ ...config, host: '0.0.0.0' }, 'anything.example.com')).toBe(true);
    expect(hostAllowed(config, '127.0.0.1:3000')).toBe(true);
    expect(hostAllowed(config, '[::1]:3000')).toBe(true);
    expect(hostAllowed(config, 'localhost.evil.com')).toBe(false);
    expect(hostAllowed(config, '127.0.0.1.nip.io')).toBe(false);
  });

  it('reads MCP_ALLOWED_ORIGINS as origins and refuses anything else', () => {
    const c = loadConfig({ MCP_ALLOWED_ORIGINS: 'https://A.example.com, http://localhost:6274/' });
    expect(c.mcpAllowedOrigins).toEqual(['https://a.example.com', 'http://localhost:6274']);
    for (const bad of [
      '*',
      'a.example.com',
      'https://a.example.com/path',
      'ftp://a.example.com',
      'https://u:p@a.example.com',
    ]) {
      expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: bad }), bad).toThrow(ConfigError);
    }
  });
});

describe('the MCP key as Authorization: Bearer', () => {
  it('works for the SDK client and the resource GETs', async () => {
    const { client } = await connectMcp(server.url, null, { Authorization: `Bearer ${tenant.mcpKey}` });
    expect((await client.listTools()).tools.length).toBeGreaterThan(5);
    await client.close();
    const auth = await fetch(`${server.url}/mcp/auth`, { headers: { Authorization: `Bearer ${tenant.mcpKey}` } });
    expect(auth.status).toBe(200);
    expect(await auth.json()).toMatchObject({ authenticated: true, organization: { id: tenant.organization.id } });
  });

  it('never lets a REST key into MCP, nor an MCP key into REST', async () => {
    const rpc = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${tenant.apiKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(initializeRequest()),
    });
    expect(rpc.status).toBe(401);
    expect(((await rpc.json()) as { error: { code: number } }).error.code).toBe(-32001);
    const get = await fetch(`${server.url}/mcp/resources`, { headers: { Authorization: `Bearer ${tenant.apiKey}` } });
    expect(get.status).toBe(401);
    expect(await get.json()).toMatchObject({ code: 'INVALID_API_KEY' });
    const rest = await server
      .clientFor(tenant.mcpKey)
      .analyticsMetrics({ query: { app_id: tenant.app.id, metric: 'dau' } });
    expect(rest.response.status).toBe(401);
    expect(rest.error).toMatchObject({ code: 'INVALID_API_KEY' });
  });

  it('prefers X-MCP-API-Key when both are sent', async () => {
    const res = await fetch(`${server.url}/mcp/auth`, {
      headers: { 'X-MCP-API-Key': tenant.mcpKey, Authorization: `Bearer ${tenant.apiKey}` },
    });
    expect(res.status).toBe(200);
  });
});
