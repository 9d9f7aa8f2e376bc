// `tally users erase`, `tally users export` and `tally audit`: data-protection requests and the
// audit trails (an app's, or the installation's), through the admin API.
import { Writable } from 'node:stream';
import type { AuditAction, AuditEntry, InstallationAuditAction } from '@tally/client';
import type { Command } from 'commander';
import { adminClient, CliError, call, type GlobalOptions, integer, print, withGlobalOptions } from './runtime.js';

function registerUsers(program: Command): void {
  const users = program.command('users').description("erase or export a user's data");
  withGlobalOptions(
    users
      .command('erase <app_id> <user_id>')
      .description('erase a user (external id or alias) and everything stored about them; cannot be undone'),
  ).action(async (appId: string, userId: string, opts: GlobalOptions) => {
    const admin = adminClient(opts);
    const result = await call(admin, admin.client.adminPrivacyEraseUser({ path: { app_id: appId, user_id: userId } }));
    const e = result.erased;
    print(opts, result, [
      `Erased the user "${userId}" of app ${appId}.`,
      `  users: ${e.users}, aliases: ${e.aliases}, events: ${e.events}, visits: ${e.visits}`,
      `  push subscriptions: ${e.push_subscriptions}, deliveries: ${e.deliveries}, queued sends cancelled: ${e.queued_sends_cancelled}`,
    ]);
  });
  withGlobalOptions(
    users
      .command('export <app_id> <user_id>')
      .description('write everything stored about a user (external id or alias) to standard output, as JSON'),
  ).action(async (appId: string, userId: string, opts: GlobalOptions) => {
    const admin = adminClient(opts);
    const outcome = await admin.client.adminPrivacyExportUser({
      path: { app_id: appId, user_id: userId },
      parseAs: 'stream',
    });
    // A refusal is read as JSON by `call`; a success is copied to stdout as it arrives.
    if (!outcome.response?.ok) {
      const { error, response } = outcome;
      const body = response ? await response.text().catch(() => '') : '';
      await call(admin, Promise.resolve({ data: undefined, error: parse(body) ?? error, response }));
      return;
    }
    const stream = outcome.data as unknown as ReadableStream<Uint8Array> | undefined;
    if (!stream) throw new CliError('The server sent no export body.');
    await stream.pipeTo(Writable.toWeb(process.stdout));
  });
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const APP_ACTIONS: readonly AuditAction[] = [
  'user.erase',
  'user.export',
  'app.create',
  'app.update',
  'key.create',
  'key.revoke',
  'push_provider.configure',
  'identity_secret.generate',
  'identity_secret.remove',
  'campaign.create',
  'campaign.pause',
  'campaign.resume',
  'version.add',
  'demo.seed',
];
const INSTALLATION_ACTIONS: readonly InstallationAuditAction[] = [
  'organization.create',
  'organization.update',
  'admin_token.rotate',
  'admin_token.retire',
  'secret_key.reseal',
];

interface AuditOptions extends GlobalOptions {
  action?: string;
  limit?: number;
  offset?: number;
}

type Row = Pick<AuditEntry, 'created_at' | 'actor' | 'actor_kind' | 'actor_name' | 'details'> & {
  action: string;
  subject: string;
};

/** Who acted, in a few words: `admin env (ADMIN_TOKEN)`, `rest key <id> (label)`. */
const who = (r: Row) =>
  `${r.actor_kind === 'admin' ? 'admin' : `${r.actor_kind} key`} ${r.actor}${r.actor_name ? ` (${r.actor_name})` : ''}`;

/** The details as `key=value` pairs, objects as compact JSON. */
const detailText = (details: Record<string, unknown>) =>
  Object.entries(details)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');

/** Rows as aligned columns under a header. */
function table(rows: Row[]): string[] {
  const cells = rows.map((r) => [r.created_at, r.action, who(r), r.subject, detailText(r.details)]);
  const header = ['TIME', 'ACTION', 'ACTOR', 'SUBJECT', 'DETAILS'];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) =>
    c
      .map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...cells.map(line)];
}

const appSubject = (i: AuditEntry) =>
  i.campaign_id !== null
    ? `campaign ${i.campaign_id}`
    : i.user_id !== null
      ? `user ${JSON.stringify(i.user_id)}${i.completed ? '' : ' (interrupted)'}`
      : '-';

function checkAction(action: string | undefined, allowed: readonly string[]): void {
  if (action !== undefined && !allowed.includes(action)) {
    throw new CliError(`--action must be one of ${allowed.join(', ')}; got "${action}".`);
  }
}

async function appTrail(appId: string, opts: AuditOptions): Promise<void> {
  checkAction(opts.action, APP_ACTIONS);
  const admin = adminClient(opts);
  const query = { action: opts.action as AuditAction | undefined, limit: opts.limit, offset: opts.offset };
  const page = await call(admin, admin.client.adminPrivacyAudit({ path: { app_id: appId }, query }));
  const rows = page.items.map((i) => ({
    ...i,
    subject: appSubject(i),
    details: Object.keys(i.counts).length > 0 ? { ...i.counts, ...i.details } : i.details,
  }));
  print(opts, page, [
    `${page.total} audit entr${page.total === 1 ? 'y' : 'ies'} for app ${appId}${page.has_more ? ` (showing ${page.items.length} from ${page.offset})` : ''}.`,
    ...(rows.length > 0 ? table(rows) : []),
  ]);
}

async function installationTrail(opts: AuditOptions): Promise<void> {
  checkAction(opts.action, INSTALLATION_ACTIONS);
  const admin = adminClient(opts);
  const query = { action: opts.action as InstallationAuditAction | undefined, limit: opts.limit, offset: opts.offset };
  const page = await call(admin, admin.client.adminAuditList({ query }));
  const rows = page.items.map((i) => ({
    ...i,
    subject: i.organization_id !== null ? `organization ${i.organization_id}` : 'installation',
  }));
  print(opts, page, [
    `${page.total} installation audit entr${page.total === 1 ? 'y' : 'ies'}${page.has_more ? ` (showing ${page.items.length} from ${page.offset})` : ''}.`,
    ...(rows.length > 0 ? table(rows) : []),
  ]);
}

function registerAudit(program: Command): void {
  withGlobalOptions(
    program
      .command('audit [app_id]')
      .description(
        "an app's audit trail, newest first (every admin action on the app, erasures, exports, campaigns MCP keys created); without an app id, the installation's trail (organizations, admin token rotations, SECRET_KEY re-seals)",
      )
      .option('--action <action>', 'only entries of this action, for example key.revoke')
      .option('--limit <n>', 'entries to show (1-1000, default 100)', integer(1))
      .option('--offset <n>', 'entries to skip', integer(0)),
  ).action(async (appId: string | undefined, opts: AuditOptions) => {
    if (appId === undefined) await installationTrail(opts);
    else await appTrail(appId, opts);
  });
}

export function registerPrivacyCommands(program: Command): void {
  registerUsers(program);
  registerAudit(program);
}
