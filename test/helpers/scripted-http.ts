// A local HTTP server that answers from a script, one step per request, and records what arrived
// (method, path, headers, body, and when), for tests of what a client sends and when.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Arrival {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** performance.now() when the request arrived. */
  at: number;
  /** Date.now() when the request arrived. */
  wall: number;
}

/** What to answer one request with: a status, headers and a JSON body (or raw text); 'drop' closes the socket. */
export type Step =
  | 'drop'
  | { status: number; headers?: Record<string, string>; body?: unknown; raw?: string; delay?: number };

export interface ScriptedServer {
  url: string;
  arrivals: Arrival[];
  close(): Promise<void>;
}

/** Answers the n-th request with steps[n], and every later one with the last step. */
export async function startScripted(steps: Step[]): Promise<ScriptedServer> {
  const arrivals: Arrival[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      arrivals.push({
        method: req.method!,
        path: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        at,
        wall: Date.now(),
      });
      const step = steps[Math.min(arrivals.length - 1, steps.length - 1)]!;
      if (step === 'drop') {
        req.socket.destroy();
        return;
      }
      const answer = () => {
        if (res.destroyed) return;
        res.writeHead(step.status, { 'Content-Type': 'application/json', ...step.headers });
        res.end(step.raw ?? JSON.stringify(step.body ?? {}));
      };
      if (step.delay) setTimeout(answer, step.delay);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arrivals,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Tally's error envelope for a status, as the server sends it. */
export function envelope(code: string, status: number): { status: number; body: unknown } {
  return { status, body: { success: false, error: http.STATUS_CODES[status], code, message: `${code} (test)` } };
}
