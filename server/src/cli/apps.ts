// `tally apps create` and `apps update`: an app and its settings (website, bot detection, consent,
// conversions, retention, IP addresses, push limits, MCP campaigns, identity secrets), through the
// admin API.
import type { AppUpdate } from '@tally/client';
import { type Command, Option } from 'commander';
import {
  type Admin,
  adminClient,
  CliError,
  call,
  clearable,
  collect,
  defined,
  type GlobalOptions,
  integer,
  listValue,
  print,
  show,
  withGlobalOptions,
} from './runtime.js';

const FOREVER = 'forever';

/** `forever` (or `none`) keeps data forever; otherwise a number of days. (Commander turns a null
 * returned here into "", so "forever" is kept as a marker until the request is built.) */
function retentionDays(value: string): number | typeof FOREVER {
  if (value === 'forever' || value === 'none') return FOREVER;
  return integer(1)(value);
}

type AppView = {
  app_id: string;
  organization_id: string;
  name: string;
  website_url: string | null;
  authorized_domains: string[];
  bot_detection: string;
  advanced_attested: boolean;
  consent_message: string | null;
  conversion_events: string[];
  retention_days: number | null;
  ip_mode: string;
  push_frequency_cap_per_day: number;
  push_quiet_hours: string | null;
  mcp_campaigns: boolean;
};

const appSummary = (app: AppView): string[] => [
  `  name: ${app.name}`,
  `  organization: ${app.organization_id}`,
  `  website URL: ${show(app.website_url)}`,
  `  authorized domains: ${show(app.authorized_domains)}`,
  `  bot detection: ${app.bot_detection}${app.advanced_attested ? ' (consent attested)' : ''}`,
  `  consent message: ${show(app.consent_message)}`,
  `  conversion events: ${app.conversion_events.length ? app.conversion_events.join(', ') : 'any event with revenue'}`,
  `  retention: ${app.retention_days === null ? 'forever' : `${app.retention_days} days`}`,
  `  IP addresses: ${app.ip_mode}`,
  `  campaign pushes per user and day: at most ${app.push_frequency_cap_per_day}`,
  `  quiet hours: ${app.push_quiet_hours ?? 'none'}`,
  `  campaigns from AI clients (MCP): ${app.mcp_campaigns ? 'allowed' : 'refused'}`,
];

interface AppUpdateOptions extends GlobalOptions {
  name?: string;
  websiteUrl?: string;
  authorizedDomain?: string[];
  botDetection?: AppUpdate['bot_detection'];
  advancedAttested?: boolean;
  consentMessage?: string;
  conversionEvent?: string[];
  retentionDays?: number | typeof FOREVER;
  ipMode?: AppUpdate['ip_mode'];
  pushFrequencyCap?: number;
  pushQuietHours?: string;
  mcpCampaigns?: 'on' | 'off';
  identitySecret?: 'generate' | 'remove-old';
}

type SecretView = { secret_id: string; created_at: string };

/**
 * `--identity-secret generate` adds a secret (printed once; at most two are active, so a site can
 * switch before the old one goes); `remove-old` removes the older of two.
 */
async function changeIdentitySecrets(admin: Admin, appId: string, action: 'generate' | 'remove-old') {
  const path = { app_id: appId };
  if (action === 'generate') {
    const created = await call(admin, admin.client.adminIdentitySecretsGenerate({ path }));
    const { active, secret, ...info } = created;
    return {
      extra: { identity_secret: { ...info, secret }, identity_secrets: active },
      lines: [
        `Generated identity secret ${info.secret_id}:`,
        `  ${secret}`,
        'It is shown only once: store it on your server now. Sign each user id with it:',
        '  user_hash = hex(HMAC-SHA256(secret, user_id)), passed to ServiceWeb.setUserId(id, { userHash }).',
        active.length > 1
          ? `The app now has ${active.length} active secrets; once your site uses the new one, run --identity-secret remove-old.`
          : 'It is the only active secret of the app.',
      ],
    };
  }
  const { items } = await call(admin, admin.client.adminIdentitySecretsList({ path }));
  if (items.length < 2) {
    throw new CliError(
      items.length === 0
        ? 'This app has no identity secret to remove.'
        : 'This app has one identity secret; remove-old removes the older of two. Generate a new one first (--identity-secret generate), switch your site to it, then remove the old one.',
    );
  }
  const oldest = items[0] as SecretView;
  const removed = await call(
    admin,
    admin.client.adminIdentitySecretsRemove({ path: { app_id: appId, secret_id: oldest.secret_id } }),
  );
  return {
    extra: { identity_secret_removed: removed.secret_id, identity_secrets: removed.active },
    lines: [
      `Removed identity secret ${removed.secret_id} (created ${oldest.created_at}); hashes made with it are now refused.`,
      `Active: ${removed.active.map((a: SecretView) => a.secret_id).join(', ') || 'none'}.`,
    ],
  };
}

export function registerAppCommands(program: Command): void {
  const apps = program.command('apps').description('apps and their settings');
  registerAppCreate(apps);
  registerAppUpdate(apps);
}

/** `tally apps create`. */
function registerAppCreate(apps: Command): void {
  withGlobalOptions(
    apps
      .command('create')
      .description('create an app in an organization')
      .requiredOption('--org <org_id>', 'organization to create it in')
      .requiredOption('--name <name>', 'display name')
      .option('--website-url <url>', "the app's website URL"),
  ).action(async (opts: GlobalOptions & { org: string; name: string; websiteUrl?: string }) => {
    const admin = adminClient(opts);
    const app = await call(
      admin,
      admin.client.adminAppsCreate({
        body: defined({ organization_id: opts.org, name: opts.name, website_url: opts.websiteUrl }),
      }),
    );
    print(opts, app, [`Created app ${app.app_id}.`, ...appSummary(app)]);
  });
}

/** `tally apps update`: settings, and the identity secrets of verified identify. */
function registerAppUpdate(apps: Command): void {
  withGlobalOptions(
    apps
      .command('update <app_id>')
      .description("change an app's settings; repeated list flags replace the whole list")
      .option('--name <name>', 'display name')
      .option('--website-url <url>', 'website URL ("" clears it)')
      .option('--authorized-domain <domain>', 'extra allowed host name, repeatable ("" alone clears the list)', collect)
      .addOption(new Option('--bot-detection <mode>', 'bot detection').choices(['off', 'basic', 'advanced']))
      .option('--advanced-attested', 'attest that visitors are shown a consent message (needed for advanced)')
      .option('--no-advanced-attested', 'withdraw that attestation')
      .option('--consent-message <text>', 'consent message for advanced mode ("" clears it)')
      .option('--conversion-event <name>', 'event that counts as a conversion, repeatable ("" alone clears)', collect)
      .option('--retention-days <n>', 'days to keep data, or "forever"', retentionDays)
      .addOption(
        new Option('--ip-mode <mode>', 'how client IP addresses are stored').choices(['full', 'truncate', 'none']),
      )
      .option(
        '--push-frequency-cap <n>',
        'campaign pushes one user may receive per 24 hours (0 stops them)',
        integer(0),
      )
      .option('--push-quiet-hours <HH:MM-HH:MM|none>', 'when campaign sends wait, organization time (none removes)')
      .addOption(
        new Option('--mcp-campaigns <on|off>', 'whether AI clients may create push campaigns through MCP keys').choices(
          ['on', 'off'],
        ),
      )
      .addOption(
        new Option(
          '--identity-secret <action>',
          'generate: a new identity secret for verified identify (printed once); remove-old: remove the older of two',
        ).choices(['generate', 'remove-old']),
      ),
  ).action(async (appId: string, opts: AppUpdateOptions) => {
    const body: AppUpdate = defined({
      name: opts.name,
      website_url: clearable(opts.websiteUrl),
      authorized_domains: listValue(opts.authorizedDomain),
      bot_detection: opts.botDetection,
      advanced_attested: opts.advancedAttested,
      consent_message: clearable(opts.consentMessage),
      conversion_events: listValue(opts.conversionEvent),
      retention_days: opts.retentionDays === FOREVER ? null : opts.retentionDays,
      ip_mode: opts.ipMode,
      push_frequency_cap_per_day: opts.pushFrequencyCap,
      push_quiet_hours: opts.pushQuietHours === 'none' ? null : opts.pushQuietHours,
      mcp_campaigns: opts.mcpCampaigns === undefined ? undefined : opts.mcpCampaigns === 'on',
    });
    const changes = Object.keys(body).length > 0;
    if (!changes && !opts.identitySecret) throw new CliError('Nothing to change: give at least one setting flag.');
    const admin = adminClient(opts);
    const path = { app_id: appId };
    const app = changes
      ? await call(admin, admin.client.adminAppsUpdate({ path, body }))
      : await call(admin, admin.client.adminAppsGet({ path }));
    const secrets = opts.identitySecret ? await changeIdentitySecrets(admin, appId, opts.identitySecret) : null;
    print(opts, { ...app, ...secrets?.extra }, [
      ...(changes ? [`Updated app ${app.app_id}.`, ...appSummary(app)] : []),
      ...(secrets?.lines ?? []),
    ]);
  });
}
