// An independent validator in front of the test servers: Stoplight Prism (5.14.2, the last release
// for Node 20) as a validating proxy, for `npm run test:prism` (TEST_PRISM=1, vitest.prism.config.ts).
//
//   test ──> front (one per test server, prism-front.ts) ──> Prism (one per run) ──> dispatcher ──> server
//
// Prism takes about 3 s to start here, so the run starts one (global-setup.ts) rather than one
// per test server. Its upstream is a dispatcher that sends each request on to the server named by
// a header the server's front adds. The front reads the violations Prism found for each request
// from its `sl-violations` answer header, so each is tied to its request and answer.
//
// Prism reads a copy of the committed document in which objects are closed in the form it enforces
// (closed-contract.ts): `additionalProperties: false`, since Prism 5 ignores the document's
// `unevaluatedProperties: {not: {}}`, and response models closed as the contract observer closes
// them, so an undeclared field in an answer is a violation for Prism too.
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadContract } from '../../server/src/contract.js';
import { closeObjects } from './closed-contract.js';

const PRISM = fileURLToPath(new URL('../../node_modules/@stoplight/prism-cli/dist/index.js', import.meta.url));

/** The header that names the server a request is for, between a front and the dispatcher. */
export const UPSTREAM_HEADER = 'x-tally-test-upstream';
/** The request's own Host, which Prism replaces with the dispatcher's. */
export const HOST_HEADER = 'x-tally-test-host';

export const prismWanted = () => process.env.TEST_PRISM === '1';

/**
 * Writes the document Prism reads (once per version of the committed document) and returns its
 * path, with how many object schemas it closed and how many had to stay open.
 */
export function prismDocument(): { file: string; closed: number; leftOpen: number } {
  const { yaml, doc } = loadContract();
  const derived = structuredClone(doc) as Record<string, unknown>;
  const counts = closeObjects(derived, 'additionalProperties');
  const hash = createHash('sha256').update(yaml).digest('hex').slice(0, 16);
  const file = path.join(os.tmpdir(), `tally-prism-${hash}.json`);
  if (!fs.existsSync(file)) {
    const partial = `${file}.${process.pid}`;
    fs.writeFileSync(partial, JSON.stringify(derived));
    fs.renameSync(partial, file);
  }
  return { file, ...counts };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
    probe.on('error', reject);
  });
}

export interface Closable {
  url: string;
  close(): Promise<void>;
}

/** Starts Prism as a validating proxy in front of `upstream`; resolves once it listens. */
export async function startPrism(upstream: string, document = prismDocument().file): Promise<Closable> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.execPath,
    [
      PRISM,
      'proxy',
      document,
      upstream,
      ...['--port', String(port), '--host', '127.0.0.1', '--cors', 'false'],
      // Violations go back in each answer's sl-violations header (prism-front.ts reads them);
      // `--errors false` leaves the answer itself as the server gave it.
      ...['--errors', 'false', '--validate-request', 'true'],
      // PRISM_LOG=FILE keeps everything Prism says there (each request, what it forwarded and found).
      ...['--verboseLevel', process.env.PRISM_LOG ? 'info' : 'error'],
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } },
  );
  let output = '';
  const log = process.env.PRISM_LOG ? fs.createWriteStream(process.env.PRISM_LOG, { flags: 'a' }) : null;
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4000);
    log?.write(chunk);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let stopping = false;
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) => {
      // A Prism that stops by itself fails the run: every request after it would fail for that reason.
      if (!stopping) console.error(`Prism stopped (${code ?? signal}); its last words:\n${output}`);
      reject(new Error(`Prism exited (${code ?? signal}):\n${output}`));
    }),
  );
  exited.catch(() => {});
  await Promise.race([listening(port), exited]);
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      stopping = true;
      child.kill('SIGTERM');
      await gone;
    },
  };
}

async function listening(port: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`Prism did not listen on ${port} within 60 s`);
}

/** Sends each request on to the loopback server its UPSTREAM_HEADER names, with its own Host. */
export async function startDispatcher(): Promise<Closable> {
  const server = http.createServer((req, res) => {
    const target = String(req.headers[UPSTREAM_HEADER] ?? '');
    if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(target)) {
      res
        .writeHead(502, { 'content-type': 'text/plain' })
        .end(`dispatcher: no test server named by ${UPSTREAM_HEADER}`);
      return;
    }
    const headers = { ...req.headers };
    if (headers[HOST_HEADER]) headers.host = String(headers[HOST_HEADER]);
    delete headers[UPSTREAM_HEADER];
    delete headers[HOST_HEADER];
    const out = http.request(`${target}${req.url}`, { method: req.method, headers, agent: false }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  // Prism keeps its connections to the dispatcher alive: never close one under it as it idles.
  server.keepAliveTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The dispatcher and a Prism in front of it: what a Prism run shares between its test servers. */
export async function startPrismRun(document?: string): Promise<Closable> {
  const dispatcher = await startDispatcher();
  try {
    const prism = await startPrism(dispatcher.url, document);
    return {
      url: prism.url,
      async close() {
        await prism.close();
        await dispatcher.close();
      },
    };
  } catch (err) {
    await dispatcher.close();
    throw err;
  }
}
