// Routes each validated request to the handler registered for its contract operationId. An
// operation of the contract with no handler yet answers 501 NOT_IMPLEMENTED, never a fake success.
import type { NextFunction, Request, Response } from 'express';
import { NotImplementedError } from '../errors.js';

export type Handler = (req: Request, res: Response) => unknown | Promise<unknown>;
export type HandlerTable = Readonly<Record<string, Handler>>;

interface OpenApiRequestMeta {
  schema?: { operationId?: string; summary?: string };
  pathParams?: Record<string, string>;
}

export function operationId(req: Request): string | undefined {
  return (req as Request & { openapi?: OpenApiRequestMeta }).openapi?.schema?.operationId;
}

export function dispatch(handlers: HandlerTable) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const meta = (req as Request & { openapi?: OpenApiRequestMeta }).openapi;
    const id = meta?.schema?.operationId;
    if (!id) return next();
    const handler = handlers[id];
    if (!handler) throw new NotImplementedError(meta?.schema?.summary ? `"${meta.schema.summary}"` : id);
    // Express 5 gives each layer its own params; the contract's path parameters are the ones that count.
    req.params = { ...meta?.pathParams };
    await handler(req, res);
  };
}
