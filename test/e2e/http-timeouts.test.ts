// The HTTP server's timeouts (http/listener.ts): a client sending its headers one byte a second
// (slow loris) is answered 408 and disconnected once the header timeout (10 s) has passed, found by
// Node's check every second, while other clients are served normally meanwhile; idle keep-alive
// connections are kept 65 s, longer than load balancers' usual 60 s.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONNECTIONS_CHECKING_INTERVAL_MS,
  HEADERS_TIMEOUT_MS,
  KEEP_ALIVE_TIMEOUT_MS,
} from '../../server/src/http/listener.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
}, 60_000);
afterAll(() => server?.close());

interface Loris {
  /** Resolves when the server closes the connection: what it sent, and after how long. */
  closed: Promise<{ received: string; afterMs: number }>;
  /** Bytes of the headers sent so far. */
  sent(): number;
}

/** Sends a request's headers one byte a second, never finishing them. */
function slowLoris(baseUrl: string): Loris {
  const url = new URL(baseUrl);
  const headers = `POST /v1/events HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n${'X-Padding: a\r\n'.repeat(20)}`;
  const socket = net.connect(Number(url.port), url.hostname);
  let sent = 0;
  let received = '';
  const began = Date.now();
  const timer = setInterval(() => {
    if (sent < headers.length && !socket.destroyed) socket.write(headers[sent++]!);
  }, 1000);
  socket.setEncoding('utf8');
  socket.on('data', (d) => {
    received += d;
  });
  const closed = new Promise<{ received: string; afterMs: number }>((resolve) => {
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ received, afterMs: Date.now() - began });
    });
    socket.on('error', () => undefined); // a reset closes it too
  });
  return { closed, sent: () => sent };
}

describe('HTTP timeouts', () => {
  it('closes a connection whose headers arrive a byte a second, while serving others', async () => {
    const loris = slowLoris(server.url);
    await new Promise((r) => setTimeout(r, 3_000));
    // meanwhile, a normal request on another connection is served
    const res = await tenant.client.eventsTrack({ body: { event_name: 'meanwhile', user_id: 'u-1' } });
    expect(res.response.status).toBe(200);
    expect(loris.sent()).toBeGreaterThan(0);

    const { received, afterMs } = await loris.closed;
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
    // not before the header timeout; within it, Node's check interval and room for a busy machine
    expect(afterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 1_000);
    expect(afterMs).toBeLessThan(HEADERS_TIMEOUT_MS + CONNECTIONS_CHECKING_INTERVAL_MS + 15_000);
    // the server was never held up
    const after = await fetch(`${server.url}/healthz`);
    expect(after.status).toBe(200);
  }, 60_000);

  it('keeps idle connections longer than load balancers do', async () => {
    const res = await fetch(`${server.url}/healthz`);
    expect(res.headers.get('keep-alive')).toBe(`timeout=${KEEP_ALIVE_TIMEOUT_MS / 1000}`);
    expect(KEEP_ALIVE_TIMEOUT_MS).toBeGreaterThan(60_000);
  });
});
