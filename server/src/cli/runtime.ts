// What every `tally` command shares: the global flags (--url, --admin-token, --json), the admin
// client, turning the server's answers into output or a clear error, and option parsers.
import fs from 'node:fs';
import path from 'node:path';
import { createTallyClient, type TallyClient } from '@tally/client';
import { type Command, InvalidArgumentError } from 'commander';
import { recordedServerAddress } from '../admin/server-address.js';
import { type Config, ConfigError, cliServerUrl, loadConfig } from '../config.js';

export const DEFAULT_URL = 'http://127.0.0.1:3000';

export interface GlobalOptions {
  url?: string;
  adminToken?: string;
  json?: boolean;
}

/** An error the CLI reports as one message on stderr, exiting with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** Adds the flags every command takes. */
export function withGlobalOptions(command: Command): Command {
  return command
    .option(
      '--url <url>',
      `where the Tally server is served (default: TALLY_URL, else PORT and HOST if set, else the address the running server recorded in <DATA_DIR>/server.json, else ${DEFAULT_URL})`,
    )
    .option(
      '--admin-token <token>',
      'admin token (default: ADMIN_TOKEN, else admin_token in <DATA_DIR>/credentials.json)',
    )
    .option('--json', 'print one JSON object instead of a summary');
}

let config: Config | undefined;

/** The configuration, read once (config.ts is the only reader of the environment). */
export function cliConfig(): Config {
  if (!config) {
    try {
      config = loadConfig();
    } catch (err) {
      if (err instanceof ConfigError) throw new CliError(err.message);
      throw err;
    }
  }
  return config;
}

function adminTokenFor(options: GlobalOptions): string {
  if (options.adminToken) return options.adminToken;
  const cfg = cliConfig();
  if (cfg.adminToken) return cfg.adminToken;
  const file = path.join(cfg.dataDir, 'credentials.json');
  let raw: string;
  try {
    raw = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(
      code === 'ENOENT'
        ? `No admin token: pass --admin-token, set ADMIN_TOKEN, or run tally where the server's DATA_DIR holds credentials.json (looked for ${file}).`
        : `Could not read ${file} (${code ?? String(err)}); pass --admin-token instead.`,
    );
  }
  let token: unknown;
  try {
    token = (JSON.parse(raw) as { admin_token?: unknown }).admin_token;
  } catch {
    token = undefined;
  }
  if (typeof token !== 'string' || token === '') {
    throw new CliError(`${file} holds no admin_token; pass --admin-token instead.`);
  }
  return token;
}

export interface Admin {
  client: TallyClient;
  url: string;
}

/** A client of the admin API at --url, authenticated with the admin token. */
export function adminClient(options: GlobalOptions): Admin {
  const { address, from } = serverAddress(options);
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    throw new CliError(`${from} must be an address such as ${DEFAULT_URL}; got "${address}".`);
  }
  const baseUrl = url.toString().replace(/\/+$/, '');
  return { client: createTallyClient({ baseUrl, adminToken: adminTokenFor(options) }), url: baseUrl };
}

/** Where the server is: --url, TALLY_URL, PORT/HOST, the address it recorded, the default. */
function serverAddress(options: GlobalOptions): { address: string; from: string } {
  if (options.url !== undefined) return { address: options.url, from: '--url' };
  const fromEnv = cliServerUrl();
  if (fromEnv !== undefined) return { address: fromEnv.url, from: fromEnv.from };
  const recorded = recordedServerAddress(cliConfig().dataDir);
  return { address: recorded ?? DEFAULT_URL, from: 'the recorded server address' };
}

interface ServerError {
  code?: string;
  message?: string;
  details?: { errors?: { path: string; message: string }[] };
}

type Outcome = { data?: unknown; error?: unknown; response?: Response };
type Resource<R extends Outcome> = Omit<NonNullable<R['data']>, 'success'>;

/**
 * The data of a successful call, without the envelope's `success` flag. A refusal becomes a
 * CliError carrying the server's message and code; an unreachable server a message saying so.
 */
export async function call<R extends Outcome>(admin: Admin, request: Promise<R>): Promise<Resource<R>> {
  const { data, error, response } = await request;
  if (!response) {
    const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause;
    const reason = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
    throw new CliError(
      `Could not reach the Tally server at ${admin.url} (${reason}). Is it running? Start it with \`npm start\`, or pass --url.`,
    );
  }
  if (error !== undefined || !response.ok || data === undefined) {
    const body = (typeof error === 'object' && error !== null ? error : {}) as ServerError;
    const message = body.message ?? (typeof error === 'string' && error ? error : response.statusText);
    const fields = (body.details?.errors ?? [])
      .filter((e) => !message.includes(e.path))
      .map((e) => `\n  ${e.path}: ${e.message}`)
      .join('');
    throw new CliError(`${message} (${body.code ?? `HTTP ${response.status}`})${fields}`);
  }
  const { success: _success, ...rest } = data as { success?: unknown };
  return rest as Resource<R>;
}

/** Prints the resource as JSON with --json, otherwise the readable summary lines. */
export function print(options: GlobalOptions, resource: object, summary: string | string[]): void {
  const text = options.json ? JSON.stringify(resource, null, 2) : [summary].flat().join('\n');
  process.stdout.write(`${text}\n`);
}

// Option parsers ------------------------------------------------------------------------------

export function integer(min: number) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value.trim()) || Number(value) < min) {
      throw new InvalidArgumentError(`expected a whole number of at least ${min}.`);
    }
    return Number(value);
  };
}

/** Collects a repeatable flag's values in order. */
export const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** A repeated list flag: given at all replaces the whole list; `""` alone clears it. */
export const listValue = (values: string[] | undefined): string[] | undefined =>
  values?.map((v) => v.trim()).filter((v) => v !== '');

/** A text setting where `""` clears the value (null). */
export const clearable = (value: string | undefined): string | null | undefined =>
  value === undefined ? undefined : value === '' ? null : value;

/** Drops the keys whose value is undefined, so they are left out of a request body. */
export function defined<T extends object>(body: T): T {
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) as T;
}

/** `a: 1, b: 2` style for summaries; null shows as "none". */
export const show = (value: unknown): string =>
  value === null || value === undefined
    ? 'none'
    : Array.isArray(value)
      ? value.length === 0
        ? 'none'
        : value.join(', ')
      : String(value);
