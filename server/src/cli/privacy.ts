// `tally users erase`, `tally users export` and `tally audit`: data-protection requests and the
// audit trail, through the admin API (recorded with the actor `admin`).
import { Writable } from 'node:stream';
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

function registerAudit(program: Command): void {
  withGlobalOptions(
    program
      .command('audit <app_id>')
      .description("an app's audit trail (erasures, exports and campaign creations), newest first")
      .option('--limit <n>', 'entries to show (1-1000, default 100)', integer(1))
      .option('--offset <n>', 'entries to skip', integer(0)),
  ).action(async (appId: string, opts: GlobalOptions & { limit?: number; offset?: number }) => {
    const admin = adminClient(opts);
    const page = await call(
      admin,
      admin.client.adminPrivacyAudit({ path: { app_id: appId }, query: { limit: opts.limit, offset: opts.offset } }),
    );
    print(opts, page, [
      `${page.total} audit entr${page.total === 1 ? 'y' : 'ies'} for app ${appId}${page.has_more ? ` (showing ${page.items.length} from ${page.offset})` : ''}.`,
      ...page.items.map((i) => {
        const subject = i.campaign_id !== null ? `campaign ${i.campaign_id}` : JSON.stringify(i.user_id);
        const who =
          i.actor_kind === 'admin'
            ? 'admin'
            : `${i.actor_kind} key ${i.actor}${i.actor_name ? ` (${i.actor_name})` : ''}`;
        const counts = Object.entries(i.counts)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ');
        return `  ${i.created_at}  ${i.action}  ${subject}  by ${who}${i.completed ? '' : ' (interrupted)'}  ${counts}`;
      }),
    ]);
  });
}

export function registerPrivacyCommands(program: Command): void {
  registerUsers(program);
  registerAudit(program);
}
