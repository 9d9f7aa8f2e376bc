// Applies the input rules (../input-rules.ts) to every request, right after JSON parsing and
// before contract validation: the body, the query and the path's parameters. A violation is 400
// INVALID_REQUEST with `details.errors = [{path, message}]`, paths like `/body/properties/a`,
// `/query/app_id` or `/path/user_id`. Running first means no later step (the validator, the
// database) ever sees a NUL byte, a lone surrogate, an infinite number or a 5,000-level object.
import type { NextFunction, Request, Response } from 'express';
import type { OpenApiDocument } from '../contract.js';
import { type FieldError, ValidationError } from '../errors.js';
import { inputViolations, MAX_REPORTED, summarise, textViolation } from '../input-rules.js';

interface Route {
  /** The contract's path template, for example `/v1/users/{user_id}`. */
  template: string;
  pattern: RegExp;
  /** Names of the path parameters, in order. */
  names: string[];
  /** Literal characters: the most specific route wins when several match. */
  literal: number;
  /** Per method: the query parameters declared as numbers (`limit=1e999` must not become Infinity). */
  numericQuery: Map<string, string[]>;
  /** Per method: the query parameters declared as arrays (`events[a]=1` must not reach the validator as an object). */
  listQuery: Map<string, string[]>;
}

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI parameter objects, read generically.
type Parameter = { name?: string; in?: string; schema?: any };

function isArraySchema(schema: { type?: unknown } | undefined): boolean {
  return [schema?.type].flat().includes('array');
}

function isNumericSchema(schema: { type?: unknown; anyOf?: { type?: unknown }[] } | undefined): boolean {
  const types = [schema?.type, ...(schema?.anyOf ?? []).map((s) => s.type)].flat();
  return types.includes('integer') || types.includes('number');
}

function compileRoutes(doc: OpenApiDocument): Route[] {
  const routes = Object.entries(doc.paths).map(([template, item]) => {
    const names: string[] = [];
    const source = template
      .split(/(\{[^}]+\})/)
      .map((part) => {
        const param = /^\{([^}]+)\}$/.exec(part);
        if (param) {
          names.push(param[1]!);
          return '([^/]+)';
        }
        return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      })
      .join('');
    const numericQuery = new Map<string, string[]>();
    const listQuery = new Map<string, string[]>();
    for (const [method, op] of Object.entries(item)) {
      const query = ((op as { parameters?: Parameter[] })?.parameters ?? []).filter(
        (p) => p.in === 'query' && p.name !== undefined,
      );
      numericQuery.set(
        method.toUpperCase(),
        query.filter((p) => isNumericSchema(p.schema)).map((p) => p.name!),
      );
      listQuery.set(
        method.toUpperCase(),
        query.filter((p) => isArraySchema(p.schema)).map((p) => p.name!),
      );
    }
    return {
      template,
      pattern: new RegExp(`^${source}/?$`),
      names,
      literal: template.replace(/\{[^}]+\}/g, '').length,
      numericQuery,
      listQuery,
    };
  });
  return routes.sort((a, b) => b.literal - a.literal);
}

const MALFORMED =
  'is not valid percent-encoded UTF-8 (a lone surrogate or a broken %-escape); encode the text as UTF-8';

/** What is wrong with one raw path segment, or null. */
function segmentViolation(segment: string): string | null {
  let value: string;
  try {
    value = decodeURIComponent(segment);
  } catch {
    return MALFORMED;
  }
  return textViolation(value);
}

/** Violations in the request path's parameters, named after the contract's path template. */
function pathViolations(route: Route | undefined, match: RegExpExecArray | null, rawPath: string): FieldError[] {
  const errors: FieldError[] = [];
  if (route && match) {
    route.names.forEach((name, i) => {
      const problem = segmentViolation(match[i + 1]!);
      if (problem) errors.push({ path: `/path/${name}`, message: problem });
    });
    return errors;
  }
  // No operation has this path (it will be a 404); still never let a bad segment through.
  for (const segment of rawPath.split('/')) {
    const problem = segmentViolation(segment);
    if (problem) {
      errors.push({ path: '/path', message: problem });
      break;
    }
  }
  return errors;
}

const NUMBER_LITERAL = /^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$/;

/** Numeric query values that would be coerced to Infinity (the validator lets those through). */
function numericQueryViolations(names: string[], query: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [];
  for (const name of names) {
    const raw = query[name];
    for (const value of Array.isArray(raw) ? raw : [raw]) {
      if (typeof value === 'string' && NUMBER_LITERAL.test(value) && !Number.isFinite(Number(value))) {
        errors.push({ path: `/query/${name}`, message: 'is not a finite number' });
        break;
      }
    }
  }
  return errors;
}

/**
 * List query values that are neither text nor a list (`events[a]=1` parses as an object): the
 * validator's comma splitting would fail on them.
 */
function listQueryViolations(names: string[], query: Record<string, unknown>): FieldError[] {
  return names
    .filter((name) => query[name] !== undefined && typeof query[name] !== 'string' && !Array.isArray(query[name]))
    .map((name) => ({
      path: `/query/${name}`,
      message: `must be a comma-separated list (${name}=a,b) or a repeated parameter (${name}=a&${name}=b)`,
    }));
}

export function inputRules(doc: OpenApiDocument) {
  const routes = compileRoutes(doc);
  // Paths without parameters are looked up directly; only the others need a pattern.
  const fixed = new Map<string, Route>();
  for (const r of routes) {
    if (r.names.length === 0) {
      fixed.set(r.template, r);
      fixed.set(`${r.template}/`, r);
    }
  }
  const patterned = routes.filter((r) => r.names.length > 0);
  return (req: Request, _res: Response, next: NextFunction) => {
    let match: RegExpExecArray | null = null;
    const route =
      fixed.get(req.path) ??
      patterned.find((r) => {
        match = r.pattern.exec(req.path);
        return match !== null;
      });
    const errors = pathViolations(route, match, req.path);
    const query = req.query as unknown;
    if (query && typeof query === 'object' && Object.keys(query).length > 0) {
      errors.push(...inputViolations(query, '/query'));
      const numeric = route?.numericQuery.get(req.method);
      if (numeric && numeric.length > 0) {
        errors.push(...numericQueryViolations(numeric, query as Record<string, unknown>));
      }
      const lists = route?.listQuery.get(req.method);
      if (lists && lists.length > 0) errors.push(...listQueryViolations(lists, query as Record<string, unknown>));
    }
    if (req.body !== undefined) errors.push(...inputViolations(req.body, '/body'));
    if (errors.length > 0) {
      const reported = errors.slice(0, MAX_REPORTED);
      throw new ValidationError(summarise(reported), reported);
    }
    next();
  };
}
