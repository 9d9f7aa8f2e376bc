// Input rules that hold for every value Tally accepts, whatever the endpoint or the schema: text
// is well-formed Unicode without NUL characters (PostgreSQL can store neither), object keys
// included; numbers are finite (`1e999` parses to Infinity); nesting is bounded, so that no later
// step (validator, JSON.stringify, the database driver) can overflow the stack. Pure functions:
// the HTTP middleware (http/input-rules.ts) and the ingestion service both call `inputViolations`.
import type { FieldError } from './errors.js';

/** How deep free-form objects (`properties`, `origin`, `signals`, `advanced_signals`) may nest. */
export const MAX_FREE_FORM_DEPTH = 32;
/** How deep any other request value may nest (fixed schemas need far less). */
export const MAX_DEPTH = 32;
/** At most this many violations are reported for one value; the walk stops there. */
export const MAX_REPORTED = 20;

/** Fields whose value is a free-form object: their depth is counted from the field itself. */
export const FREE_FORM_FIELDS: ReadonlySet<string> = new Set(['properties', 'origin', 'signals', 'advanced_signals']);

const NUL = '\u0000';
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

type WellFormed = { isWellFormed?: () => boolean };
const hasIsWellFormed = typeof (String.prototype as WellFormed).isWellFormed === 'function';

/** `true` when the string holds no lone UTF-16 surrogate (it can be encoded as UTF-8). */
export function isWellFormed(s: string): boolean {
  return hasIsWellFormed ? (s as unknown as Required<WellFormed>).isWellFormed() : !LONE_SURROGATE.test(s);
}

/** Length in Unicode code points, as JSON Schema's maxLength counts (an emoji is 1, not 2). */
export function codePointLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const code = s.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** Why a string breaks the text rules, or null when it is fine. */
export function textViolation(s: string): string | null {
  if (s.includes(NUL)) return 'contains a NUL character (U+0000), which cannot be stored; remove it';
  if (!isWellFormed(s)) {
    return 'contains a lone UTF-16 surrogate (text that is not valid Unicode); send well-formed UTF-8 text';
  }
  return null;
}

const SEGMENT_SHOWN = 100;

/**
 * One JSON-pointer segment (RFC 6901 escaping), made safe to echo: NUL and lone surrogates are
 * shown as `\u0000`-style escapes, and very long keys are cut.
 */
export function pointerSegment(key: string): string {
  let s = key.replace(/~/g, '~0').replace(/\//g, '~1');
  if (s.includes(NUL) || !isWellFormed(s)) s = escapeUnstorable(s);
  if (s.length <= SEGMENT_SHOWN) return s;
  const cut = /[\uD800-\uDBFF]$/.test(s.slice(0, SEGMENT_SHOWN)) ? SEGMENT_SHOWN - 1 : SEGMENT_SHOWN;
  return `${s.slice(0, cut)}...`;
}

/** NUL and lone surrogates written as `\u0000`-style escapes; paired surrogates kept. */
function escapeUnstorable(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i);
    const high = code >= 0xd800 && code <= 0xdbff;
    const low = code >= 0xdc00 && code <= 0xdfff;
    const next = s.charCodeAt(i + 1);
    if (high && next >= 0xdc00 && next <= 0xdfff) {
      out += s[i]! + s[i + 1]!;
      i++;
    } else if (code === 0 || high || low) {
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    } else {
      out += s[i]!;
    }
  }
  return out;
}

export interface InputRuleOptions {
  /** The value itself is a free-form object (its own depth counts as level 1). */
  freeForm?: boolean;
  /** Stop after this many violations (default MAX_REPORTED). */
  maxReported?: number;
}

interface Frame {
  value: unknown;
  path: string;
  /** Depth inside the current free-form object (1 = the object itself), or 0 outside one. */
  freeDepth: number;
  /** Depth of fixed (schema-defined) structure above this value. */
  depth: number;
  /** What is wrong with the key this value sits under, reported in document order. */
  keyProblem?: string;
}

function depthMessage(limit: number, freeForm: boolean): string {
  return freeForm
    ? `is nested more than ${limit} levels deep; free-form objects may nest at most ${limit} levels`
    : `is nested more than ${limit} levels deep`;
}

/**
 * Every violation of the input rules in `value`, as `{path, message}` items whose paths extend
 * `path` (for example `/body`). Walks iteratively, so any nesting depth is safe to check.
 */
export function inputViolations(value: unknown, path = '', options: InputRuleOptions = {}): FieldError[] {
  return isClean(value, options.freeForm === true) ? [] : preciseViolations(value, path, options);
}

/** The walk behind `inputViolations` for values that break a rule: paths, document order. */
export function preciseViolations(value: unknown, path = '', options: InputRuleOptions = {}): FieldError[] {
  const max = options.maxReported ?? MAX_REPORTED;
  const errors: FieldError[] = [];
  const stack: Frame[] = [{ value, path, freeDepth: options.freeForm ? 1 : 0, depth: options.freeForm ? 0 : 1 }];
  while (stack.length > 0 && errors.length < max) {
    const { value: v, path: p, freeDepth, depth, keyProblem } = stack.pop()!;
    if (keyProblem) {
      errors.push({ path: p, message: `is a key that ${keyProblem}` });
      if (errors.length >= max) break;
    }
    if (typeof v === 'string') {
      const problem = textViolation(v);
      if (problem) errors.push({ path: p, message: problem });
      continue;
    }
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) {
        errors.push({
          path: p,
          message: 'is not a finite number (a JSON number this large overflows to Infinity)',
        });
      }
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (freeDepth > MAX_FREE_FORM_DEPTH) {
      errors.push({ path: p, message: depthMessage(MAX_FREE_FORM_DEPTH, true) });
      continue;
    }
    if (depth > MAX_DEPTH) {
      errors.push({ path: p, message: depthMessage(MAX_DEPTH, false) });
      continue;
    }
    const children: Frame[] = [];
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        children.push(childFrame(v[i], `${p}/${i}`, freeDepth, depth, false));
      }
    } else {
      for (const key of Object.keys(v)) {
        const keyPath = `${p}/${pointerSegment(key)}`;
        const startsFreeForm = freeDepth === 0 && FREE_FORM_FIELDS.has(key);
        const child = childFrame((v as Record<string, unknown>)[key], keyPath, freeDepth, depth, startsFreeForm);
        const problem = textViolation(key);
        if (problem) child.keyProblem = problem;
        children.push(child);
      }
    }
    // Reversed, so that violations come out in document order.
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  return errors.slice(0, max);
}

const cleanText = (s: string) => !s.includes(NUL) && isWellFormed(s);

/**
 * The common case, fast: true when `value` breaks no rule. It allocates nothing per value (no
 * paths, no frames for scalars); `inputViolations` only walks again, slowly and precisely, when
 * this says no. Both apply exactly the same rules.
 */
export function isClean(root: unknown, freeForm: boolean): boolean {
  const values: object[] = [];
  const freeDepths: number[] = [];
  const depths: number[] = [];
  const check = (v: unknown, freeDepth: number, depth: number): boolean => {
    if (typeof v === 'string') return cleanText(v);
    if (typeof v === 'number') return Number.isFinite(v);
    if (v === null || typeof v !== 'object') return true;
    if (freeDepth > MAX_FREE_FORM_DEPTH || depth > MAX_DEPTH) return false;
    values.push(v);
    freeDepths.push(freeDepth);
    depths.push(depth);
    return true;
  };
  if (!check(root, freeForm ? 1 : 0, freeForm ? 0 : 1)) return false;
  while (values.length > 0) {
    const v = values.pop()!;
    const freeDepth = freeDepths.pop()!;
    const depth = depths.pop()!;
    const inFree = freeDepth > 0;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        if (!check(v[i], inFree ? freeDepth + 1 : 0, inFree ? depth : depth + 1)) return false;
      }
    } else {
      for (const key in v) {
        if (!Object.hasOwn(v, key)) continue;
        if (!cleanText(key)) return false;
        const child = (v as Record<string, unknown>)[key];
        const ok = inFree
          ? check(child, freeDepth + 1, depth)
          : FREE_FORM_FIELDS.has(key)
            ? check(child, 1, depth)
            : check(child, 0, depth + 1);
        if (!ok) return false;
      }
    }
  }
  return true;
}

function childFrame(value: unknown, path: string, freeDepth: number, depth: number, startsFreeForm: boolean): Frame {
  if (startsFreeForm) return { value, path, freeDepth: 1, depth };
  if (freeDepth > 0) return { value, path, freeDepth: freeDepth + 1, depth };
  return { value, path, freeDepth: 0, depth: depth + 1 };
}

/** Turns violations into the one-line summary used in error messages. */
export function summarise(errors: FieldError[]): string {
  const first = errors[0];
  return first ? `Invalid request: ${first.path} ${first.message}.` : 'Invalid request.';
}
