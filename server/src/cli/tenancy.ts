// `tally init`, `orgs`, `apps`, `keys` and `versions`: tenants and their settings, through the
// admin API.
import type { AppUpdate, KeyPermission } from '@tally/client';
import { type Command, InvalidArgumentError, Option } from 'commander';
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

const PERMISSIONS: readonly KeyPermission[] = ['read', 'write'];

function permissionList(value: string): KeyPermission[] {
  const items = value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const unknown = items.filter((p) => !PERMISSIONS.includes(p as KeyPermission));
  if (items.length === 0 || unknown.length > 0) {
    throw new InvalidArgumentError('expected a comma-separated list of read and write, for example read,write.');
  }
  return [...new Set(items)] as KeyPermission[];
}

const FOREVER = 'forever';

/** `forever` (or `none`) keeps data forever; otherwise a number of days. (Commander turns a null
 * returned here into "", so "forever" is kept as a marker until the request is built.) */
function retentionDays(value: string): number | typeof FOREVER {
  if (value === 'forever' || value === 'none') return FOREVER;
  return integer(1)(value);
}

function registerInit(program: Command): void {
  withGlobalOptions(
    program
      .command('init')
      .description('create an organization, an app, a REST key and an MCP key (read, write)')
      .option('--name <name>', 'name of the organization and of its app', 'My app')
      .option('--timezone <tz>', 'IANA time zone of the organization, for example Europe/Paris (default UTC)')
      .option('--website-url <url>', "the app's website URL"),
  ).action(async (opts: GlobalOptions & { name: string; timezone?: string; websiteUrl?: string }) => {
    const admin = adminClient(opts);
    const created: string[] = [];
    try {
      const org = await call(
        admin,
        admin.client.adminOrganizationsCreate({ body: defined({ name: opts.name, timezone: opts.timezone }) }),
      );
      created.push(`organization ${org.organization_id}`);
      const app = await call(
        admin,
        admin.client.adminAppsCreate({
          body: defined({ organization_id: org.organization_id, name: opts.name, website_url: opts.websiteUrl }),
        }),
      );
      created.push(`app ${app.app_id}`);
      const path = { app_id: app.app_id };
      const rest = await call(admin, admin.client.adminKeysCreate({ path, body: { kind: 'rest', name: 'init' } }));
      created.push(`REST key ${rest.key_id}`);
      const mcp = await call(
        admin,
        admin.client.adminKeysCreate({ path, body: { kind: 'mcp', permissions: ['read', 'write'], name: 'init' } }),
      );
      const result = {
        organization_id: org.organization_id,
        app_id: app.app_id,
        api_key: rest.key,
        mcp_api_key: mcp.key,
      };
      print(opts, result, [
        `Created organization ${org.organization_id} (${org.name}, ${org.timezone}) and app ${app.app_id}.`,
        `  API key (REST):  ${rest.key}`,
        `  MCP API key:     ${mcp.key}`,
        'These keys are shown only once: store them now.',
      ]);
    } catch (err) {
      if (err instanceof CliError && created.length > 0) {
        throw new CliError(`${err.message}\nAlready created: ${created.join(', ')}.`, err.exitCode);
      }
      throw err;
    }
  });
}

function registerOrgs(program: Command): void {
  const orgs = program.command('orgs').description('organizations');
  withGlobalOptions(
    orgs
      .command('update <org_id>')
      .description("change an organization's settings")
      .option('--name <name>', 'display name')
      .option('--description <text>', 'free-text description ("" clears it)')
      .option('--timezone <tz>', 'IANA time zone, for example Europe/Paris'),
  ).action(async (orgId: string, opts: GlobalOptions & { name?: string; description?: string; timezone?: string }) => {
    const admin = adminClient(opts);
    const org = await call(
      admin,
      admin.client.adminOrganizationsUpdate({
        path: { organization_id: orgId },
        body: defined({ name: opts.name, description: clearable(opts.description), timezone: opts.timezone }),
      }),
    );
    print(opts, org, [
      `Updated organization ${org.organization_id}.`,
      `  name: ${org.name}`,
      `  description: ${show(org.description)}`,
      `  timezone: ${org.timezone}`,
    ]);
  });
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

function registerApps(program: Command): void {
  const apps = program.command('apps').description('apps and their settings');
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

function registerKeys(program: Command): void {
  const keys = program.command('keys').description('REST and MCP API keys');
  withGlobalOptions(
    keys
      .command('create <app_id>')
      .description('create a key; an MCP key belongs to the app’s organization')
      .addOption(new Option('--kind <kind>', 'rest or mcp').choices(['rest', 'mcp']).makeOptionMandatory())
      .option('--permissions <list>', 'MCP keys: read, write or read,write (default read,write)', permissionList)
      .option('--org-wide', 'REST keys: may name any app of the organization in app_id')
      .option('--name <label>', 'a label to recognise the key by'),
  ).action(
    async (
      appId: string,
      opts: GlobalOptions & { kind: 'rest' | 'mcp'; permissions?: KeyPermission[]; orgWide?: boolean; name?: string },
    ) => {
      if (opts.kind === 'rest' && opts.permissions) throw new CliError('--permissions applies to MCP keys only.');
      if (opts.kind === 'mcp' && opts.orgWide) {
        throw new CliError('--org-wide applies to REST keys only (an MCP key always covers its organization).');
      }
      const admin = adminClient(opts);
      const key = await call(
        admin,
        admin.client.adminKeysCreate({
          path: { app_id: appId },
          body: defined({
            kind: opts.kind,
            permissions: opts.kind === 'mcp' ? (opts.permissions ?? ['read', 'write']) : undefined,
            org_wide: opts.orgWide,
            name: opts.name,
          }),
        }),
      );
      const scope =
        key.kind === 'mcp'
          ? `organization ${key.organization_id} (${key.permissions.join(', ')})`
          : `app ${key.app_id}`;
      print(opts, key, [
        `Created ${key.kind === 'mcp' ? 'MCP' : key.org_wide ? 'organization-wide REST' : 'REST'} key ${key.key_id} for ${scope}.`,
        `  Key: ${key.key}`,
        'It is shown only once: store it now.',
      ]);
    },
  );

  withGlobalOptions(keys.command('list <app_id>').description("list an app's keys (never their secrets)")).action(
    async (appId: string, opts: GlobalOptions) => {
      const admin = adminClient(opts);
      const list = await call(admin, admin.client.adminKeysList({ path: { app_id: appId } }));
      const lines = list.items.map(
        (k) =>
          `  ${k.key_id}  ${k.kind.padEnd(4)}  ${k.kind === 'mcp' ? k.permissions.join(',') : k.org_wide ? 'org-wide' : 'app'}` +
          `  created ${k.created_at}${k.revoked_at ? `  REVOKED ${k.revoked_at}` : ''}${k.name ? `  "${k.name}"` : ''}`,
      );
      print(opts, list, [`${list.items.length} key(s) for app ${appId}.`, ...lines]);
    },
  );

  withGlobalOptions(keys.command('revoke <key_id>').description('revoke a key at once')).action(
    async (keyId: string, opts: GlobalOptions) => {
      const admin = adminClient(opts);
      const revoked = await call(admin, admin.client.adminKeysRevoke({ path: { key_id: keyId } }));
      print(opts, revoked, `Revoked key ${revoked.key_id}; requests with it now get 401 REVOKED_API_KEY.`);
    },
  );
}

function registerVersions(program: Command): void {
  const versions = program.command('versions').description('app versions');
  withGlobalOptions(
    versions
      .command('add <app_id>')
      .description('record a released version of an app')
      .requiredOption('--version <version>', 'version string, for example 2.4.0')
      .option('--release-notes <text>', 'what changed')
      .option('--released-at <time>', 'release time, ISO 8601 (default now)')
      .option('--created-by <who>', 'who released it'),
  ).action(
    async (
      appId: string,
      opts: GlobalOptions & { version: string; releaseNotes?: string; releasedAt?: string; createdBy?: string },
    ) => {
      const admin = adminClient(opts);
      const version = await call(
        admin,
        admin.client.adminVersionsAdd({
          path: { app_id: appId },
          body: defined({
            version: opts.version,
            release_notes: opts.releaseNotes,
            released_at: opts.releasedAt,
            created_by: opts.createdBy,
          }),
        }),
      );
      print(opts, version, `Recorded version ${version.version} of app ${appId} (released ${version.released_at}).`);
    },
  );
}

export function registerTenancyCommands(program: Command): void {
  registerInit(program);
  registerOrgs(program);
  registerApps(program);
  registerKeys(program);
  registerVersions(program);
}
