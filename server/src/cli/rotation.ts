// `tally admin-token rotate|retire-previous` and `tally secrets rotate`: rotating the admin token
// and sealing stored secrets again after a SECRET_KEY change, through the admin API. The steps
// around them (environment variables, restarts) are in docs/rotation.md.
import fs from 'node:fs';
import path from 'node:path';
import type { AdminTokenInfo, ResealCounts } from '@tally/client';
import type { Command } from 'commander';
import {
  adminClient,
  CliError,
  call,
  cliConfig,
  type GlobalOptions,
  integer,
  print,
  withGlobalOptions,
} from './runtime.js';

const tokenLine = (t: AdminTokenInfo) =>
  `  ${t.token_id}  ${t.label || '(no label)'}  issued ${t.created_at}${t.expires_at ? `, valid until ${t.expires_at}` : ''}`;

/** The credentials file the token was read from (no --admin-token, no ADMIN_TOKEN), if it exists. */
function credentialsFileInUse(opts: GlobalOptions): string | null {
  if (opts.adminToken || cliConfig().adminToken) return null;
  const file = path.join(cliConfig().dataDir, 'credentials.json');
  return fs.existsSync(file) ? file : null;
}

/** Puts the new token in the credentials file, keeping its other fields and its mode (0600). */
function updateCredentials(file: string, token: string): void {
  let credentials: Record<string, unknown>;
  try {
    credentials = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new CliError(`The token was rotated, but ${file} could not be read to store it (${(err as Error).message}).`);
  }
  fs.writeFileSync(file, `${JSON.stringify({ ...credentials, admin_token: token }, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
}

function registerAdminToken(program: Command): void {
  const group = program.command('admin-token').description('rotate the admin token (docs/rotation.md)');
  withGlobalOptions(
    group
      .command('rotate')
      .description('issue a new admin token; the current ones stay valid for the overlap')
      .option('--overlap-seconds <n>', 'how long the current tokens stay valid (default 86400, one day)', integer(0))
      .option('--label <label>', 'a label for the new token, shown in the audit trail'),
  ).action(async (opts: GlobalOptions & { overlapSeconds?: number; label?: string }) => {
    const admin = adminClient(opts);
    const file = credentialsFileInUse(opts);
    const body = { overlap_seconds: opts.overlapSeconds, label: opts.label };
    const issued = await call(admin, admin.client.adminTokensRotate({ body }));
    if (file) updateCredentials(file, issued.token);
    print(opts, issued, [
      `New admin token ${issued.token_id} (shown once): ${issued.token}`,
      file
        ? `  saved in ${file}`
        : '  store it where your scripts and the CLI read it (--admin-token or credentials.json)',
      issued.previous_tokens_end_at
        ? `  the previous tokens stay valid until ${issued.previous_tokens_end_at}; end them sooner with \`tally admin-token retire-previous\``
        : '  there was no previous token to retire',
      'Valid admin tokens:',
      ...issued.active.map(tokenLine),
    ]);
  });
  withGlobalOptions(
    group.command('retire-previous').description('end every admin token but the newest, at once'),
  ).action(async (opts: GlobalOptions) => {
    const admin = adminClient(opts);
    const result = await call(admin, admin.client.adminTokensRetirePrevious());
    print(opts, result, [
      `Retired ${result.retired} admin token(s). Valid admin tokens:`,
      ...result.active.map(tokenLine),
    ]);
  });
}

const counts = (name: string, c: ResealCounts) =>
  `  ${name}: ${c.resealed} sealed again, ${c.current} already current, ${c.unreadable} unreadable`;

function registerSecrets(program: Command): void {
  const group = program.command('secrets').description('secrets stored encrypted with SECRET_KEY');
  withGlobalOptions(
    group
      .command('rotate')
      .description(
        'seal every stored secret again with the current SECRET_KEY (run after starting with SECRET_KEY_PREVIOUS; safe to repeat)',
      ),
  ).action(async (opts: GlobalOptions) => {
    const admin = adminClient(opts);
    const result = await call(admin, admin.client.adminSecretKeyReseal());
    const unreadable = result.push_providers.unreadable + result.identity_secrets.unreadable;
    print(opts, result, [
      `Sealed stored secrets with the current SECRET_KEY (${result.previous_keys} previous key(s) tried).`,
      counts('push providers', result.push_providers),
      counts('identity secrets', result.identity_secrets),
      unreadable > 0
        ? '  Unreadable values open with no configured key: configure those push providers or identity secrets again.'
        : '  Every stored secret now opens with the current key; SECRET_KEY_PREVIOUS can be removed.',
    ]);
  });
}

export function registerRotationCommands(program: Command): void {
  registerAdminToken(program);
  registerSecrets(program);
}
