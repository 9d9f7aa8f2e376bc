// Structured JSON logs (pino). One root logger; requests get a child carrying their request id.
// Logs never hold a key, token, secret, password, identity hash or a user's value, at any level:
// call sites log ids, counts and our own words; errors go through `safeError`, which keeps their
// type, codes and stack frames, drops everything else they carry (a database error's detail holds
// row values, a provider error its reply), and blanks quoted text in their message (PostgreSQL and
// JSON.parse quote the values they refuse); and the redaction below is the last guard for field
// names that should never reach a log line.
import { type DestinationStream, type Logger, pino } from 'pino';

const SECRET_FIELDS = [
  'authorization',
  'x-mcp-api-key',
  'cookie',
  'access_token',
  'rest_api_key',
  'webhook_secret',
  'vapid_private_key',
  'secret',
  'secrets',
  'password',
  'token',
  'api_key',
  'apiKey',
  'user_hash',
  'properties',
  'sql',
  'bindings',
];

/** Each field at the top of a log object, one level down, and in request headers. */
const REDACT_PATHS = [
  ...SECRET_FIELDS.flatMap((f) => [`["${f}"]`, `*["${f}"]`]),
  ...SECRET_FIELDS.map((f) => `req.headers["${f}"]`),
];

/** Error fields that name things of the schema or the protocol, never values. */
const SAFE_ERROR_FIELDS = [
  'code',
  'errno',
  'syscall',
  'severity',
  'routine',
  'table',
  'column',
  'constraint',
  'status',
];
const MAX_MESSAGE = 500;

/** Our words and the error's structure, without the quoted text a message may carry (values). */
function scrub(text: string): string {
  const out = text.replace(/"[^"]*"/g, '"…"').replace(/'[^']*'/g, "'…'");
  return out.length > MAX_MESSAGE ? `${out.slice(0, MAX_MESSAGE - 1)}…` : out;
}

/** What of an error (or an error's message) may be logged. */
export function safeError(err: unknown, depth = 0): unknown {
  if (typeof err === 'string') return scrub(err);
  if (!err || typeof err !== 'object') return err;
  const e = err as Record<string, unknown>;
  const out: Record<string, unknown> = {
    type: (e.constructor as { name?: string } | undefined)?.name ?? 'Error',
    message: scrub(String(e.message ?? '')),
  };
  for (const field of SAFE_ERROR_FIELDS) {
    const value = e[field];
    if (typeof value === 'number' || (typeof value === 'string' && value.length <= 64)) out[field] = value;
  }
  if (typeof e.stack === 'string') {
    // The first line repeats the message; the frames name only our code.
    out.stack = e.stack
      .split('\n')
      .filter((line) => /^\s+at /.test(line))
      .join('\n');
  }
  if (e.cause !== undefined && depth < 3) out.cause = safeError(e.cause, depth + 1);
  return out;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'tally' },
    serializers: { err: (err: unknown) => safeError(err), error: (err: unknown) => safeError(err) },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  return destination ? pino(options, destination) : pino(options);
}
