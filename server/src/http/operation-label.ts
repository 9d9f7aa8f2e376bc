// The name a request is logged and counted under: its contract operation id (as the validator
// matched it, or, for a request refused before validation, as its method and path match the
// contract), else a fixed name for the surfaces outside the contract (`mcp`, `ops`, `sdk`), else
// `unmatched`. Never a raw path: metric labels stay few, and paths may carry identifiers.
import type { Request } from 'express';
import { listOperations, type OpenApiDocument } from '../contract.js';
import { UNMATCHED } from '../metrics.js';
import { operationId } from './operations.js';

const OPS_PATHS = new Set(['/healthz', '/readyz', '/metrics', '/openapi.json', '/openapi.yaml', '/docs']);
const SDK_PATH = /\/sdk\/(v1\/)?service-web\.js$/;

interface Route {
  method: string;
  pattern: RegExp;
  operationId: string;
  /** Literal characters: the most specific route wins when several match. */
  literal: number;
}

function compile(doc: OpenApiDocument): Route[] {
  return listOperations(doc)
    .map((op) => ({
      method: op.method.toUpperCase(),
      operationId: op.operationId,
      literal: op.path.replace(/\{[^}]+\}/g, '').length,
      pattern: new RegExp(
        `^${op.path
          .split(/(\{[^}]+\})/)
          .map((part) => (/^\{[^}]+\}$/.test(part) ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
          .join('')}/?$`,
      ),
    }))
    .sort((a, b) => b.literal - a.literal);
}

/** The request's path as it arrived (Express rewrites req.url inside mounted routers). */
function pathOf(req: Request): string {
  const url = req.originalUrl ?? req.url;
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

export function operationLabeler(doc: OpenApiDocument): (req: Request) => string {
  const routes = compile(doc);
  return (req) => {
    const matched = operationId(req);
    if (matched) return matched;
    const path = pathOf(req);
    if (path === '/mcp' && req.method !== 'GET') return 'mcp';
    if (path === '/mcp' && (req.header('accept') ?? '').includes('text/event-stream')) return 'mcp';
    if (OPS_PATHS.has(path)) return 'ops';
    if (req.method === 'GET' && SDK_PATH.test(path)) return 'sdk';
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    return routes.find((r) => r.method === method && r.pattern.test(path))?.operationId ?? UNMATCHED;
  };
}
