// A stand-in for Tally behind a Prism run (prism.ts) and a front (prism-front.ts), for the tests of
// the Prism run itself: it answers each request as the test says, with no validator of its own, so
// what the front reports is Prism's finding alone. Call `throughPrism()` at the top of a describe.
import http from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { type Closable, startPrismRun } from './prism.js';
import { type PrismFront, type PrismViolation, startPrismFront } from './prism-front.js';

export interface StandInAnswer {
  status: number;
  body: unknown;
}

export interface StandInRequest {
  method: string;
  /** Path and query, as sent. */
  url: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface Sent {
  status: number;
  body: unknown;
  /** What the front reported for this request, `METHOD /path -> status: where what`. */
  found: string[];
  /** Whether the front sent it straight to the stand-in instead of through Prism. */
  bypassed: boolean;
}

export interface StandInRun {
  /** Sends `request` through the front; the stand-in gives `answer`. */
  send(request: StandInRequest, answer: StandInAnswer): Promise<Sent>;
  /** The run's Prism, to reach it without the front. */
  prismUrl(): string;
  /** The stand-in, as the dispatcher behind Prism names it. */
  standInUrl(): string;
}

/** A stand-in, a Prism run on `document` (default: the closed copy) and a front, for this describe. */
export function throughPrism(document?: string): StandInRun {
  let next: StandInAnswer = { status: 500, body: null };
  const found: PrismViolation[] = [];
  let app: http.Server;
  let prism: Closable;
  let front: PrismFront;
  let appUrl: string;
  beforeAll(async () => {
    app = http.createServer((req, res) => {
      req.resume();
      req.on('end', () =>
        res.writeHead(next.status, { 'content-type': 'application/json' }).end(JSON.stringify(next.body)),
      );
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    appUrl = `http://127.0.0.1:${(app.address() as net.AddressInfo).port}`;
    prism = await startPrismRun(document);
    front = await startPrismFront(prism.url, appUrl, (v) => found.push(v));
  });
  afterAll(async () => {
    await front?.close();
    await prism?.close();
    app?.closeAllConnections();
    await new Promise((resolve) => app?.close(resolve));
  });
  return {
    prismUrl: () => prism.url,
    standInUrl: () => appUrl,
    async send(request, answer) {
      next = answer;
      found.length = 0;
      const before = front.counts().bypassed;
      const res = await fetch(`${front.url}${request.url}`, {
        method: request.method,
        headers: request.headers,
        body: request.body,
      });
      return {
        status: res.status,
        body: await res.json(),
        found: found.map((v) => `${v.method} ${v.path} -> ${v.status}: ${v.problem}`),
        bypassed: front.counts().bypassed > before,
      };
    },
  };
}
