// The typed operation table. Every operation of the contract (operations.gen.ts) has exactly one
// entry: a handler, whose input and output types are the contract's, or NOT_BUILT while its issue
// is open (501 NOT_IMPLEMENTED). A missing, misspelt or wrongly typed handler is a compile error.
// A handler receives the validated input and the request context, and returns the success body
// (sent as JSON) or a Reply for anything else (CSV, a redirect).
import type { NextFunction, Request, Response } from 'express';
import { NotImplementedError } from '../errors.js';
import { type RequestContext, requestContext } from './context.js';
import type { OperationId, Operations } from './operations.gen.js';

export type { OperationId } from './operations.gen.js';

type Data<Op extends OperationId> = Operations[Op]['data'];
type Field<T, K extends string> = T extends { [P in K]?: infer V } ? NonNullable<V> : never;

/** What a handler receives: the request's body, query and path parameters, as the contract declares them. */
export interface Input<Op extends OperationId> {
  body: Field<Data<Op>, 'body'>;
  query: Field<Data<Op>, 'query'>;
  path: Field<Data<Op>, 'path'>;
}

type Responses<Op extends OperationId> = Operations[Op]['responses'];
/** The success body of an operation. */
export type Output<Op extends OperationId> = Responses<Op>[keyof Responses<Op> & (200 | 201)];

const REPLY = Symbol('reply');
/** A response that is not the operation's JSON body. */
export interface Reply {
  readonly [REPLY]: (res: Response) => void | Promise<void>;
}

/** Writes chunks as they come, waiting while the client is slow; stops reading when it leaves. */
async function writeStream(res: Response, chunks: AsyncGenerator<string, void, undefined>): Promise<void> {
  let gone = false;
  const onClose = () => {
    gone = true;
  };
  res.once('close', onClose);
  try {
    for await (const chunk of chunks) {
      if (gone) break; // ends the generator: its cleanup runs
      if (!res.write(chunk)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.once('drain', done);
          res.once('close', done);
        });
      }
    }
    if (!gone) res.end();
  } catch (err) {
    if (!res.headersSent) throw err;
    // The status line is sent: the only way left to say "failed" is to cut the body short.
    requestContext(res).log.error({ err }, 'streamed response failed');
    res.destroy();
  } finally {
    res.off('close', onClose);
  }
}
export const reply = {
  /** A body of another media type (the contract declares it). */
  send: (type: string, body: string, headers: Record<string, string> = {}): Reply => ({
    [REPLY]: (res) => {
      res.set(headers);
      res.type(type).send(body);
    },
  }),
  redirect: (status: 301 | 302 | 303 | 307, location: string, headers: Record<string, string> = {}): Reply => ({
    [REPLY]: (res) => {
      res.set(headers);
      // No body: the contract declares none for a redirect (Express's res.redirect writes one).
      res.status(status).location(location).end();
    },
  }),
  /**
   * The operation's JSON body written piece by piece as `chunks` yields it (the pieces must
   * concatenate to the body); an error after the first piece cuts the response short.
   */
  stream: (
    type: string,
    chunks: AsyncGenerator<string, void, undefined>,
    headers: Record<string, string> = {},
  ): Reply => ({
    [REPLY]: async (res) => {
      res.set(headers);
      res.status(200).type(type);
      await writeStream(res, chunks);
    },
  }),
  /** The operation's JSON body with extra headers. */
  json: <T>(body: T, headers: Record<string, string>): Reply => ({
    [REPLY]: (res) => {
      res.set(headers);
      res.json(body);
    },
  }),
};

export type Handler<Op extends OperationId> = (
  input: Input<Op>,
  context: RequestContext,
) => Promise<Output<Op> | Reply> | Output<Op> | Reply;

/** An operation whose issue is still open: it answers 501 NOT_IMPLEMENTED. */
export const NOT_BUILT = Symbol('not built');

export type HandlerTable = { readonly [Op in OperationId]: Handler<Op> | typeof NOT_BUILT };

/** A group of handlers (one area); the table combines the groups and the compiler checks it is whole. */
export type Handlers<Op extends OperationId> = { readonly [K in Op]: Handler<K> };

interface OpenApiRequestMeta {
  schema?: { operationId?: string; summary?: string };
  pathParams?: Record<string, string>;
}

export function operationId(req: Request): OperationId | undefined {
  return (req as Request & { openapi?: OpenApiRequestMeta }).openapi?.schema?.operationId as OperationId | undefined;
}

/** Routes each validated request to the handler of its contract operation. */
export function dispatch(table: HandlerTable) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const meta = (req as Request & { openapi?: OpenApiRequestMeta }).openapi;
    const id = meta?.schema?.operationId as OperationId | undefined;
    if (!id) return next();
    const handler = table[id];
    if (handler === undefined) return next();
    if (handler === NOT_BUILT) throw new NotImplementedError(meta?.schema?.summary ? `"${meta.schema.summary}"` : id);
    // Path parameters as the validator matched them (Express 5 resets req.params for each layer).
    // A request without a query string has an empty query (not parsed: Express parses on each read).
    const query = req.url.includes('?') ? (req.query ?? {}) : {};
    const input = { body: req.body ?? {}, query, path: { ...meta?.pathParams } };
    const result = await (handler as Handler<OperationId>)(input as never, requestContext(res));
    if (result !== null && typeof result === 'object' && REPLY in result) await (result as Reply)[REPLY](res);
    else res.json(result);
  };
}
