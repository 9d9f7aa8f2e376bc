// Which web pages may call /mcp, and under which host names (DNS rebinding), for the JSON-RPC
// endpoint and the resource GETs alike. A request with an Origin header is served only when that
// origin is Tally's own as configured (the origin of PUBLIC_BASE_URL; without it, a loopback
// origin on the port the request came in on) or is listed in MCP_ALLOWED_ORIGINS. "Our own" is
// never read from Host or X-Forwarded-Host: a page on another site controls the first (DNS
// rebinding) and any client sets the second. When Tally listens on a loopback address, a Host
// that is not a loopback name (nor the host of PUBLIC_BASE_URL or of an allowed origin) is
// refused too. Requests without Origin (native clients, curl) are served.

import type { NextFunction, Request, Response } from 'express';
import ipaddr from 'ipaddr.js';
import type { Config } from '../config.js';
import { envelope, type KnownErrorCode } from '../errors.js';
import { isJsonRpcRequest } from './mcp-jsonrpc.js';

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/** Whether Tally listens on a loopback address only (HOST=127.0.0.1, ::1 or localhost). */
export function listensOnLoopback(config: Pick<Config, 'host'>): boolean {
  const host = config.host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (host === 'localhost') return true;
  if (!ipaddr.isValid(host)) return false;
  const address = ipaddr.process(host);
  return address.range() === 'loopback';
}

/** The host name of a Host header value (`example.com:8080` -> `example.com`, `[::1]:3000` -> `[::1]`), lower case. */
function hostName(value: string): string | null {
  try {
    return new URL(`http://${value}`).hostname;
  } catch {
    return null;
  }
}

const originHost = (origin: string) => new URL(origin).hostname;

/** The origins allowed to call /mcp from a page, given the port the request arrived on. */
export function allowedOrigins(config: Pick<Config, 'publicBaseUrl' | 'mcpAllowedOrigins'>, localPort: number) {
  const own = config.publicBaseUrl
    ? [new URL(config.publicBaseUrl).origin]
    : LOOPBACK_NAMES.flatMap((name) => ['http', 'https'].map((s) => new URL(`${s}://${name}:${localPort}`).origin));
  return new Set([...own, ...config.mcpAllowedOrigins]);
}

/** Whether a request's Origin header may use /mcp. */
export function originAllowed(
  config: Pick<Config, 'publicBaseUrl' | 'mcpAllowedOrigins'>,
  origin: string,
  localPort: number,
): boolean {
  let normalised: string;
  try {
    normalised = new URL(origin).origin;
  } catch {
    return false; // "null" (sandboxed pages, file://) and anything else that is not an origin
  }
  return normalised !== 'null' && allowedOrigins(config, localPort).has(normalised);
}

/** Whether a Host header may reach /mcp (every host unless Tally listens on loopback). */
export function hostAllowed(
  config: Pick<Config, 'host' | 'publicBaseUrl' | 'mcpAllowedOrigins'>,
  host: string | undefined,
): boolean {
  if (host === undefined || !listensOnLoopback(config)) return true;
  const name = hostName(host);
  if (name === null) return false;
  const configured = [
    ...LOOPBACK_NAMES,
    ...(config.publicBaseUrl ? [originHost(config.publicBaseUrl)] : []),
    ...config.mcpAllowedOrigins.map(originHost),
  ];
  return configured.includes(name);
}

function refuse(req: Request, res: Response, message: string, details: Record<string, unknown>): void {
  if (isJsonRpcRequest(req)) {
    res.status(403).json({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message, data: { code: 'ORIGIN_NOT_ALLOWED' satisfies KnownErrorCode, ...details } },
    });
    return;
  }
  res.status(403).json(envelope(403, 'ORIGIN_NOT_ALLOWED', message, details));
}

/** Refuses /mcp requests from foreign origins or, on loopback, foreign host names (403). */
export function mcpOriginGuard(config: Config) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.path !== '/mcp' && !req.path.startsWith('/mcp/')) return next();
    const host = req.headers.host;
    if (!hostAllowed(config, host)) {
      return refuse(
        req,
        res,
        `This server listens on a loopback address and answers only to localhost, 127.0.0.1 or [::1] (the request was addressed to ${JSON.stringify(host)}). Set PUBLIC_BASE_URL or MCP_ALLOWED_ORIGINS to reach it under another name.`,
        { reason: 'host', host },
      );
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !originAllowed(config, origin, req.socket.localPort ?? 0)) {
      return refuse(
        req,
        res,
        `Web pages from ${JSON.stringify(origin)} may not use this MCP server. If that origin is yours, add it to MCP_ALLOWED_ORIGINS.`,
        { reason: 'origin', origin },
      );
    }
    next();
  };
}
