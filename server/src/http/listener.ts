// Tally's HTTP server: Node's own, created here (not by `app.listen`) so that slow clients are cut
// off on time, and drained for a graceful shutdown. Node checks the header and request timeouts
// only every `connectionsCheckingInterval`, which can be set only when the server is created: at
// its default (30 s) a client sending one header byte a second would hold its connection for up
// to 40 s instead of 10.
import http, { type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';

/** A request's headers must arrive within this. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** A request's headers and body must arrive within this (answering it may take longer). */
export const REQUEST_TIMEOUT_MS = 30_000;
/** An idle keep-alive connection is kept this long: above load balancers' usual 60 s idle timeout. */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** How often Node looks for connections over their header or request timeout. */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

export interface DrainOutcome {
  /** Requests still unanswered when the grace period ended (their connections were closed). */
  cut: number;
}

export interface Listener {
  readonly server: Server;
  /** Requests received and not yet answered. */
  inFlight(): number;
  /**
   * Stops accepting connections, closes idle keep-alive connections and answers the requests in
   * flight with `Connection: close`; resolves when every connection is closed, or when `graceMs`
   * has passed, after closing what remains.
   */
  drain(graceMs: number, logger: Logger): Promise<DrainOutcome>;
}

/** The classes the server makes each request and response with (Node's own when not given). */
export interface MessageClasses {
  IncomingMessage: typeof IncomingMessage;
  ServerResponse: typeof ServerResponse;
}

/**
 * Classes whose instances are born with the Express app's request and response prototypes
 * (`app.request`, `app.response`), instead of Node's ones replaced on every request by Express's
 * `app.handle` and the lean listener: changing an existing object's prototype is one of the
 * slowest things V8 does, and it leaves the object's later property accesses slow too (the
 * profile of issue 32's fourth step: about 4 % of the thread under single events). Express's own
 * `Object.setPrototypeOf(req, app.request)` then finds the prototype already in place.
 */
export function expressMessageClasses(app: { request: object; response: object }): MessageClasses {
  // Node's two classes are plain constructor functions (Node 20 and 22), so these may call them.
  const Incoming = http.IncomingMessage as unknown as (this: object, ...args: unknown[]) => void;
  const Outgoing = http.ServerResponse as unknown as (this: object, ...args: unknown[]) => void;
  function TallyRequest(this: object, ...args: unknown[]) {
    Incoming.apply(this, args);
  }
  TallyRequest.prototype = app.request;
  function TallyResponse(this: object, ...args: unknown[]) {
    Outgoing.apply(this, args);
  }
  TallyResponse.prototype = app.response;
  return {
    IncomingMessage: TallyRequest as unknown as typeof IncomingMessage,
    ServerResponse: TallyResponse as unknown as typeof ServerResponse,
  };
}

/** Creates the server with Tally's timeouts and starts listening on `port` and `host`. */
export function listen(app: RequestListener, port: number, host: string, classes?: MessageClasses): Promise<Listener> {
  const server = http.createServer({
    ...classes,
    headersTimeout: HEADERS_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
  });
  server.on('clientError', answerUnreadable);
  const listener = track(server);
  server.on('request', app);
  return new Promise<Listener>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(listener);
    });
  });
}

/** Node's own answers to what it cannot read, kept for the errors that are not about the request's bytes. */
const RAW_ANSWERS: Record<string, string> = {
  HPE_HEADER_OVERFLOW: 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\n\r\n',
  ERR_HTTP_REQUEST_TIMEOUT: 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n',
};

const UNREADABLE = JSON.stringify({
  success: false,
  error: 'Bad Request',
  code: 'INVALID_REQUEST',
  message:
    'The request could not be read as HTTP: its request line or a header holds a character HTTP does not allow (a NUL byte or another control character), or it is malformed otherwise.',
});
const UNREADABLE_ANSWER = `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(UNREADABLE)}\r\nConnection: close\r\n\r\n${UNREADABLE}`;

/**
 * A request Node's parser refuses (a NUL byte in a header value, a malformed request line) is
 * answered in the error envelope, as every other refusal is, instead of Node's bare 400; timeouts
 * and oversized headers keep Node's answers. Nothing is written once a response has started.
 */
function answerUnreadable(err: NodeJS.ErrnoException, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) socket.write(RAW_ANSWERS[err.code ?? ''] ?? UNREADABLE_ANSWER);
  socket.destroy(err);
}

function track(server: Server): Listener {
  const open = new Set<ServerResponse>();
  let draining = false;
  // Registered before the app: a request that arrives while draining (on a connection that was
  // busy) is answered with Connection: close too.
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    open.add(res);
    if (draining) res.setHeader('Connection', 'close');
    res.once('close', () => {
      open.delete(res);
      // a connection whose response went out with its headers before the drain is now idle
      if (draining) setImmediate(() => server.closeIdleConnections());
    });
  });
  return {
    server,
    inFlight: () => open.size,
    async drain(graceMs, logger) {
      draining = true;
      for (const res of open) if (!res.headersSent) res.setHeader('Connection', 'close');
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      logger.info(
        { inFlight: open.size, graceMs },
        `shutdown: no longer accepting connections; waiting for ${open.size} requests in flight`,
      );
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'grace over'>((resolve) => {
        timer = setTimeout(() => resolve('grace over'), graceMs);
      });
      const outcome = await Promise.race([closed, graceOver]);
      clearTimeout(timer);
      if (outcome !== 'grace over') {
        logger.info('shutdown: every request answered, every connection closed');
        return { cut: 0 };
      }
      const cut = open.size;
      logger.warn({ cut, graceMs }, `shutdown: closing the connections still open after ${graceMs} ms`);
      server.closeAllConnections();
      await closed;
      return { cut };
    },
  };
}
