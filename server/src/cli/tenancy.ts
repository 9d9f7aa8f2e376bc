// `tally init`, `orgs`, `keys` and `versions`: tenants, their keys and releases, through the admin
// API (`apps` is in apps.ts).
import type { KeyPermission } from '@tally/client';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { registerAppCommands } from './apps.js';
import {
  adminClient,
  CliError,
  call,
  clearable,
  defined,
  type GlobalOptions,
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
  registerAppCommands(program);
  registerKeys(program);
  registerVersions(program);
}
