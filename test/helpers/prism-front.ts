// A test server's front door in a Prism run (prism.ts): it sends each request through the run's
// Prism, naming the server for the dispatcher behind Prism, and reads what Prism found wrong from
// the answer's `sl-violations` header. A violation fails the run:
// - any error Prism finds in an answer (status, headers, body against the closed document);
// - an error Prism finds in a request the server then accepted (an answer below 400). Tests send
//   requests the document forbids on purpose, to see them refused; the server refusing them is
//   what the document asks, the server taking one is a request that broke the contract unnoticed.
//
// A few requests cannot cross Prism 5 unchanged, and go straight to the server instead (the
// contract observer still checks their answers); `bypassed()` counts them:
// - a body that is not JSON under a JSON content type (Prism parses JSON bodies itself and answers
//   such a request with its own error, so the server's 400 would never be seen); JSON that changes
//   when Prism writes it back for the server (`1e999` becomes `null`; a JSON `false`, `0` or
//   `null` body is dropped, a JSON string loses its quotes); JSON nested more than 200
//   levels (Prism's validator answers 500 itself); an object key with a character past U+00FF (or
//   DEL) anywhere in a JSON body (Prism quotes keys in the findings it sets in its sl-violations
//   header, Node refuses the header, and the process stops); a body with a Content-Encoding (Prism reads it
//   as text); a chunked body (Prism forwards it with both Transfer-Encoding and Content-Length,
//   which the server's HTTP parser refuses); a body over Prism's 10 MB limit; a body on a GET;
// - a path the WHATWG URL parser would rewrite (dot segments, backslashes): Prism forwards the
//   parsed path; a path with a malformed %-escape (`%E0%A4%A`, a lone surrogate): Prism's router
//   throws an uncaught URIError on it and the process stops;
// - operations answered with a redirect (the click link's 302): Prism's upstream client follows
//   redirects, so the answer checked would be the target's, not ours;
// - GET /mcp asking for `text/event-stream`: the MCP transport (server/src/http/mcp-jsonrpc.ts),
//   which the document leaves out although it shares the path of the server description.
// An upstream 501 would make Prism answer a mock instead; no operation answers 501 today.
import http from 'node:http';
import net from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { loadContract } from '../../server/src/contract.js';
import { type Closable, HOST_HEADER, UPSTREAM_HEADER } from './prism.js';

const PRISM_BODY_LIMIT = 10 * 1024 * 1024;

export interface PrismFront extends Closable {
  /** `METHOD /path -> status: where what`, for each violation so far. */
  violations(): string[];
  /** Requests sent through Prism, and requests that went straight to the server. */
  counts(): { throughPrism: number; bypassed: number };
}

export interface PrismViolation {
  method: string;
  path: string;
  status: number;
  /** Where and what, as Prism says it. */
  problem: string;
}

interface SlViolation {
  location?: string[];
  severity?: string;
  message?: string;
}

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI objects are walked generically here.
type Node = Record<string, any>;

/** A path template of the document as a pattern for request paths (with or without a query). */
const pathPattern = (template: string) =>
  new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/?]+')}(\\?|$)`);

interface Operations {
  /** Paths of the operations whose documented answers include a redirect. */
  redirecting: RegExp[];
  /** Query parameters declared as lists with `explode: false` (`?events=a,b`), by operation. */
  lists: { method: string; path: RegExp; name: string }[];
}

let operations: Operations | undefined;

function documentOperations(): Operations {
  if (operations) return operations;
  const { doc } = loadContract();
  operations = { redirecting: [], lists: [] };
  for (const [p, item] of Object.entries(doc.paths as Node)) {
    for (const [method, op] of Object.entries(item as Node)) {
      const statuses = Object.keys((op as Node).responses ?? {});
      if (statuses.some((s) => s.startsWith('3'))) operations.redirecting.push(pathPattern(p));
      for (const param of ((op as Node).parameters ?? []) as Node[]) {
        if (param.in === 'query' && param.explode === false && param.schema?.type === 'array')
          operations.lists.push({ method, path: pathPattern(p), name: param.name });
      }
    }
  }
  return operations;
}

/**
 * The `explode: false` list parameters that `url` sends more than once. The document gives that
 * form no meaning; the server reads every occurrence (`?events=a&events=b` is the list a, b, a form
 * its description accepts), while Prism 5 reads only the last one (its form deserializer), so what
 * Prism says about such a parameter is about another list than the one the server read.
 */
export function repeatedLists(method: string, url: string): string[] {
  const parsed = new URL(url, 'http://front.invalid');
  return documentOperations()
    .lists.filter(
      (l) =>
        l.method === method.toLowerCase() &&
        l.path.test(parsed.pathname) &&
        parsed.searchParams.getAll(l.name).length > 1,
    )
    .map((l) => l.name);
}

/** Why a request must go straight to the server; undefined when Prism can carry it. */
export function bypassReason(method: string, url: string, headers: http.IncomingHttpHeaders, body: Buffer) {
  const parsed = new URL(url, 'http://front.invalid');
  if (parsed.pathname !== url.split('?')[0]) return 'a path the URL parser rewrites';
  for (const segment of parsed.pathname.split('/')) {
    try {
      decodeURIComponent(segment);
    } catch {
      return "a path with a malformed %-escape (Prism's router throws on it, and stops)";
    }
  }
  if (documentOperations().redirecting.some((r) => r.test(url))) return 'an operation answered with a redirect';
  if (method === 'GET' && parsed.pathname === '/mcp' && String(headers.accept ?? '').includes('text/event-stream'))
    return "the MCP transport's stream, which shares GET /mcp but is not in the document";
  if (body.length === 0) return undefined;
  if (method === 'GET' || method === 'HEAD') return 'a body on a GET';
  if (body.length > PRISM_BODY_LIMIT) return "a body over Prism's limit";
  if (headers['content-encoding']) return 'a body with a Content-Encoding';
  if (headers['transfer-encoding']) return 'a chunked body';
  const type = String(headers['content-type'] ?? '').toLowerCase();
  if (/^application\/([^;]*\+)?json/.test(type)) {
    let value: unknown;
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch {
      return 'a body that is not JSON';
    }
    // Prism drops `null`, `false` and `0` bodies and forwards a string body without its quotes.
    if (value === null || typeof value !== 'object') return 'a JSON body that is neither object nor array';
    if (depth(body) > MAX_DEPTH) return "nesting deeper than Prism's validator can walk";
    if (unquotableKey(value)) return 'a JSON key Prism cannot quote in its sl-violations header (it stops)';
    if (!isDeepStrictEqual(JSON.parse(JSON.stringify(value)), value)) return 'JSON that Prism would write back changed';
  }
  return undefined;
}

/**
 * A character Node refuses in a header value, once JSON.stringify has escaped the control characters
 * below U+0020 and lone surrogates: DEL and anything past U+00FF.
 */
const NOT_IN_A_HEADER = /[\u007f\u0100-\uffff]/;

/**
 * Whether an object key anywhere in `value` has a character that cannot go in a header. Prism quotes
 * request body keys in its findings (`found 'KEY'` for an undeclared field, and in the path of a
 * finding inside one), sets them in the sl-violations header, and Node's setHeader throws: Prism
 * 5.14.2 does not catch it and the process exits (stoplightio/prism#1934 is the same fault with a
 * pattern). Values are never quoted, and the document's own names and patterns are ASCII.
 */
function unquotableKey(value: unknown): boolean {
  if (!value || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(unquotableKey);
  return Object.entries(value).some(
    ([key, inner]) => NOT_IN_A_HEADER.test(JSON.stringify(key)) || unquotableKey(inner),
  );
}

/** Prism's validator recurses per level and answers 500 itself past a few thousand. */
const MAX_DEPTH = 200;

/** How deeply a JSON text nests objects and arrays. */
function depth(body: Buffer): number {
  let level = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) deepest = Math.max(deepest, ++level);
    else if (c === 0x7d || c === 0x5d) level--;
  }
  return deepest;
}

/**
 * The header as Prism wrote it: Node sends a header set before a string body in the body's
 * encoding (UTF-8), and reads headers back as Latin-1, so `é` arrives as `Ã©`.
 */
function asWritten(header: string): string {
  const text = Buffer.from(header, 'latin1').toString('utf8');
  return text.includes('\uFFFD') ? header : text;
}

/**
 * The findings in the header. Past about 8 KB Prism cuts the JSON and says `Too many violations!`:
 * the findings before the cut are kept. Request findings come first, so a cut can only hide answer
 * findings behind a long list of request ones; the contract observer checks every answer anyway.
 */
/** A header whose first finding is on the request. */
const REQUEST_FIRST = /^(Too many violations! )?\[\{"location":\["request"/;

function readViolations(header: string): SlViolation[] {
  if (!header.startsWith('Too many violations! ')) return JSON.parse(header) as SlViolation[];
  const cut = header.slice('Too many violations! '.length);
  for (let end = cut.lastIndexOf('},{'); end > 0; end = cut.lastIndexOf('},{', end - 1)) {
    try {
      return JSON.parse(`${cut.slice(0, end + 1)}]`) as SlViolation[];
    } catch {
      // A `},{` inside a message: try an earlier one.
    }
  }
  return JSON.parse(cut) as SlViolation[];
}

/**
 * What in Prism's findings fails the run, for an answer with `status`. `misread` names query
 * parameters Prism read otherwise than the server (`repeatedLists`): its findings on the request's
 * value of those are left out, and only those.
 */
export function failures(header: string | undefined, status: number, misread: readonly string[] = []): string[] {
  if (!header) return [];
  let found: SlViolation[];
  try {
    found = readViolations(asWritten(header));
  } catch {
    // One request finding longer than the cut (a huge unknown key): nothing of it can be read. A
    // refused request's findings do not fail the run, and its answer is checked by the contract
    // observer like every answer; anything else unreadable does fail it.
    if (status >= 400 && REQUEST_FIRST.test(asWritten(header))) return [];
    return [`unreadable sl-violations header: ${header.slice(0, 200)}`];
  }
  return found
    .filter((v) => v.severity === 'Error')
    .filter((v) => v.location?.[0] === 'response' || status < 400)
    .filter((v) => !(v.location?.[0] === 'request' && v.location[1] === 'query' && misread.includes(v.location[2]!)))
    .map((v) => `${(v.location ?? []).join('.')} ${v.message ?? ''}`.trim());
}

/** Starts a front door for `upstream` (a test server) through the run's Prism at `prism`. */
export async function startPrismFront(
  prism: string,
  upstream: string,
  onViolation: (found: PrismViolation) => void = () => {},
): Promise<PrismFront> {
  const found: string[] = [];
  let throughPrism = 0;
  let bypassed = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const method = req.method ?? 'GET';
      const url = req.url ?? '/';
      const direct = bypassReason(method, url, req.headers, body) !== undefined;
      const headers: http.OutgoingHttpHeaders = { ...req.headers };
      if (direct) bypassed++;
      else {
        throughPrism++;
        headers[UPSTREAM_HEADER] = upstream;
        if (req.headers.host) headers[HOST_HEADER] = req.headers.host;
      }
      // A fresh connection each time: a kept-alive one that Prism closes as it idles (after 5 s)
      // can be picked for the next request at that moment, and the request dies with ECONNRESET.
      const out = http.request(`${direct ? upstream : prism}${url}`, { method, headers, agent: false }, (answer) => {
        const status = answer.statusCode ?? 0;
        const misread = direct ? [] : repeatedLists(method, url);
        for (const problem of failures(answer.headers['sl-violations'] as string | undefined, status, misread)) {
          const violation = { method, path: url.split('?')[0]!, status, problem };
          found.push(`${method} ${violation.path} -> ${status}: ${problem}`);
          onViolation(violation);
        }
        const raw: string[] = [];
        for (let i = 0; i < answer.rawHeaders.length; i += 2) {
          if (answer.rawHeaders[i]!.toLowerCase() === 'sl-violations') continue;
          raw.push(answer.rawHeaders[i]!, answer.rawHeaders[i + 1]!);
        }
        res.writeHead(status, raw);
        answer.pipe(res);
      });
      out.on('error', (err: NodeJS.ErrnoException) => {
        // Prism gone (it stopped, helpers/prism.ts prints why): the run cannot vouch for anything after.
        if (!direct && (err.code === 'ECONNREFUSED' || err.code === 'ECONNRESET')) {
          const violation = {
            method,
            path: url.split('?')[0]!,
            status: 0,
            problem: `Prism did not answer (${err.code})`,
          };
          found.push(`${method} ${violation.path}: ${violation.problem}`);
          onViolation(violation);
        }
        res.destroy();
      });
      out.end(body);
    });
  });
  // Test clients keep their connections to the front alive: never close one under them as it idles.
  server.keepAliveTimeout = 0;
  // A request the front's own HTTP parser refuses (a NUL in a header value, say) is the server's to
  // answer with its envelope: its bytes go to the server unchanged, and the answer's back.
  server.on('clientError', (err: Error & { rawPacket?: Buffer }, socket: net.Socket) => {
    if (!err.rawPacket || !socket.writable) {
      socket.destroy();
      return;
    }
    bypassed++;
    const target = new URL(upstream);
    const out = net.connect(Number(target.port), target.hostname, () => out.write(err.rawPacket!));
    out.on('data', (chunk) => socket.write(chunk));
    out.on('end', () => socket.end());
    out.on('error', () => socket.destroy());
    socket.on('close', () => out.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    violations: () => [...found],
    counts: () => ({ throughPrism, bypassed }),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
