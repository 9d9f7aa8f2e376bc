// `tally push configure`, `campaigns` and `seed-demo`: push delivery and demo data, through the
// admin API. A server that does not offer one of them yet answers 501, which is reported as is.
import type { CampaignCreate, CampaignCreator, PushProviderConfigure } from '@tally/client';
import { type Command, Option } from 'commander';
import {
  type Admin,
  adminClient,
  CliError,
  call,
  defined,
  type GlobalOptions,
  integer,
  print,
  show,
  withGlobalOptions,
} from './runtime.js';

/** Who created a campaign, in words. */
const createdBy = (c: CampaignCreator | null) =>
  c === null
    ? 'not recorded'
    : c.kind === 'admin'
      ? 'the admin API or CLI'
      : `the MCP key ${c.key_id}${c.key_name ? ` (${c.key_name})` : ''}`;

interface PushOptions extends GlobalOptions {
  provider: PushProviderConfigure['provider'];
  accessToken?: string;
  onesignalAppId?: string;
  restApiKey?: string;
  webhookUrl?: string;
  webhookSecret?: string;
  vapidSubject?: string;
  baseUrl?: string;
}

function registerPush(program: Command): void {
  const push = program.command('push').description('push delivery');
  withGlobalOptions(
    push
      .command('configure <app_id>')
      .description("set an app's push provider (secrets are encrypted at rest and never printed)")
      .addOption(
        new Option('--provider <provider>', 'push platform')
          .choices(['wonderpush', 'onesignal', 'webpush', 'webhook'])
          .makeOptionMandatory(),
      )
      .option('--access-token <token>', 'WonderPush access token')
      .option('--onesignal-app-id <id>', 'OneSignal app id')
      .option('--rest-api-key <key>', 'OneSignal REST API key')
      .option('--webhook-url <url>', 'URL the webhook provider posts to')
      .option('--webhook-secret <secret>', 'secret that signs webhook bodies (HMAC-SHA256)')
      .option('--vapid-subject <subject>', 'Web Push VAPID subject (mailto: or https: URL)')
      .option('--base-url <url>', "overrides the provider's API address"),
  ).action(async (appId: string, opts: PushOptions) => {
    const admin = adminClient(opts);
    const config = await call(
      admin,
      admin.client.adminPushConfigure({
        path: { app_id: appId },
        body: defined({
          provider: opts.provider,
          access_token: opts.accessToken,
          onesignal_app_id: opts.onesignalAppId,
          rest_api_key: opts.restApiKey,
          webhook_url: opts.webhookUrl,
          webhook_secret: opts.webhookSecret,
          vapid_subject: opts.vapidSubject,
          base_url: opts.baseUrl,
        }),
      }),
    );
    const lines = [`Configured ${config.provider} push for app ${appId}.`];
    if (config.base_url) lines.push(`  API address: ${config.base_url}`);
    if (config.onesignal_app_id) lines.push(`  OneSignal app id: ${config.onesignal_app_id}`);
    if (config.webhook_url) lines.push(`  webhook URL: ${config.webhook_url}`);
    if (config.vapid_subject) lines.push(`  VAPID subject: ${config.vapid_subject}`);
    if (config.webpush_public_key) lines.push(`  VAPID public key: ${config.webpush_public_key}`);
    print(opts, config, lines);
  });
}

interface CampaignOptions extends GlobalOptions {
  name: string;
  title: string;
  message?: string;
  prompt?: string;
  scheduleType: CampaignCreate['schedule_type'];
  scheduledAt?: string;
  recurrence?: string;
  inactivityDays?: number;
  triggerEventName?: string;
  triggerEventPrompt?: string;
  triggerCooldownHours?: number;
  maxCharacters?: number;
  audienceId?: string;
  audiencePrompt?: string;
  actionUrl?: string;
}

function registerCampaigns(program: Command): void {
  const campaigns = program.command('campaigns').description('push campaigns');
  registerCampaignCreate(campaigns);
  registerCampaignList(campaigns);
  registerCampaignShow(campaigns);
  registerCampaignPauseResume(campaigns);
}

/** `tally campaigns create`: the same service as the MCP tool create_push_campaign. */
function registerCampaignCreate(campaigns: Command): void {
  withGlobalOptions(
    campaigns
      .command('create <app_id>')
      .description('create a push campaign (the same service as the MCP tool create_push_campaign)')
      .requiredOption('--name <name>', 'internal name')
      .requiredOption('--title <title>', 'notification title')
      .addOption(new Option('--message <text>', 'static notification text').conflicts('prompt'))
      .option('--prompt <text>', 'instructions for generating the text of each send')
      .addOption(
        new Option('--schedule-type <type>', 'when it sends')
          .choices(['now', 'scheduled', 'recurring', 'slipping_away', 'trigger'])
          .makeOptionMandatory(),
      )
      .option('--scheduled-at <time>', 'first (or only) send time, ISO 8601')
      .option('--recurrence <cron>', 'cron expression for recurring campaigns, for example "0 9 * * 1"')
      .option('--inactivity-days <n>', 'days without activity for slipping_away (default 7)', integer(1))
      .addOption(new Option('--trigger-event-name <name>', 'exact triggering event').conflicts('triggerEventPrompt'))
      .option('--trigger-event-prompt <text>', 'the triggering event, described in words')
      .option('--trigger-cooldown-hours <n>', 'hours before one user can trigger it again (default 24)', integer(1))
      .option(
        '--max-characters <n>',
        'longest text after placeholders are filled (default 150 with --prompt)',
        integer(1),
      )
      .addOption(new Option('--audience-id <id>', 'existing audience to target').conflicts('audiencePrompt'))
      .option('--audience-prompt <text>', 'criteria of a new audience created with the campaign')
      .option('--action-url <url>', 'URL opened when a recipient taps the notification'),
  ).action(async (appId: string, opts: CampaignOptions) => {
    if (opts.message === undefined && opts.prompt === undefined) {
      throw new CliError('Give the notification text with --message, or instructions to generate it with --prompt.');
    }
    const admin = adminClient(opts);
    const created = await call(
      admin,
      admin.client.adminCampaignsCreate({
        path: { app_id: appId },
        body: defined({
          name: opts.name,
          title: opts.title,
          message: opts.message,
          prompt: opts.prompt,
          schedule_type: opts.scheduleType,
          scheduled_at: opts.scheduledAt,
          recurrence: opts.recurrence,
          inactivity_days: opts.inactivityDays,
          trigger_event_name: opts.triggerEventName,
          trigger_event_prompt: opts.triggerEventPrompt,
          trigger_cooldown_hours: opts.triggerCooldownHours,
          max_characters: opts.maxCharacters,
          audience_id: opts.audienceId,
          audience_prompt: opts.audiencePrompt,
          action_url: opts.actionUrl,
        }),
      }),
    );
    const lines = [`Created campaign ${created.campaign_id} (${created.name}), status ${created.status}.`];
    lines.push(
      created.audience
        ? `  audience: ${created.audience.id} (${created.audience.user_count} users${created.audience.auto_created ? ', created from the prompt' : ''})`
        : '  audience: every user of the app',
    );
    if (created.trigger) lines.push(`  trigger: ${created.trigger.event_name} (${created.trigger.match_method} match)`);
    lines.push(`  first send: ${created.scheduled_at ?? 'at once'}`);
    print(opts, created, lines);
    await warnWithoutProvider(admin, appId);
  });
}

/** The campaign is kept, but nothing will reach anyone until the app has a push provider: say so on stderr. */
async function warnWithoutProvider(admin: Admin, appId: string): Promise<void> {
  const { response } = await admin.client.adminPushGet({ path: { app_id: appId } });
  if (response?.status === 404) {
    process.stderr.write(
      `tally: warning: app ${appId} has no push provider configured, so this campaign's sends will fail until one is set (tally push configure ${appId} --provider ...).\n`,
    );
  }
}

/** `tally campaigns list`. */
function registerCampaignList(campaigns: Command): void {
  withGlobalOptions(campaigns.command('list <app_id>').description("list an app's campaigns, newest first")).action(
    async (appId: string, opts: GlobalOptions) => {
      const admin = adminClient(opts);
      const list = await call(admin, admin.client.adminCampaignsList({ path: { app_id: appId } }));
      const lines = list.items.map(
        (c) =>
          `  ${c.id}  ${c.status.padEnd(9)}  ${c.schedule_type.padEnd(13)}  ${c.name}  ` +
          `(sent ${c.stats.sent}, delivered ${c.stats.delivered}, clicked ${c.stats.clicked}, converted ${c.stats.converted})`,
      );
      print(opts, list, [`${list.items.length} campaign(s) in app ${appId}.`, ...lines]);
    },
  );
}

/** `tally campaigns show`. */
function registerCampaignShow(campaigns: Command): void {
  withGlobalOptions(
    campaigns.command('show <campaign_id>').description('a campaign with its counters, rates and performance'),
  ).action(async (campaignId: string, opts: GlobalOptions) => {
    const admin = adminClient(opts);
    const c = await call(admin, admin.client.adminCampaignsGet({ path: { campaign_id: campaignId } }));
    const p = c.performance;
    print(opts, c, [
      `Campaign ${c.id} (${c.name}): ${c.status}, ${c.schedule_type}${c.trigger_event ? ` on ${c.trigger_event}` : ''}.`,
      `  audience: ${c.audience_name ?? 'every user of the app'}`,
      `  created by: ${createdBy(c.created_by)}`,
      `  next run: ${c.next_run_at ?? 'none'}`,
      `  sent ${c.stats.sent}, delivered ${c.stats.delivered} (${c.stats.delivery_rate}%), clicked ${c.stats.clicked} (${c.stats.click_rate}%), converted ${c.stats.converted} (${c.stats.conversion_rate}%)`,
      `  average delivery time: ${p.avg_delivery_time ?? 'n/a'}; peak hour: ${p.peak_delivery_hour ?? 'n/a'}`,
      ...(c.stats.failed_occurrences > 0
        ? [`  failed occurrences (no push made after 5 attempts; see the server log): ${c.stats.failed_occurrences}`]
        : []),
    ]);
  });
}

/** `tally campaigns pause` and `resume`. */
function registerCampaignPauseResume(campaigns: Command): void {
  for (const [verb, done] of [
    ['pause', 'paused'],
    ['resume', 'resumed'],
  ] as const) {
    withGlobalOptions(campaigns.command(`${verb} <campaign_id>`).description(`${verb} a campaign`)).action(
      async (campaignId: string, opts: GlobalOptions) => {
        const admin = adminClient(opts);
        const path = { campaign_id: campaignId };
        const campaign = await call(
          admin,
          verb === 'pause' ? admin.client.adminCampaignsPause({ path }) : admin.client.adminCampaignsResume({ path }),
        );
        print(
          opts,
          campaign,
          `Campaign ${campaign.id} (${campaign.name}) ${done}; its status is now ${campaign.status}.`,
        );
      },
    );
  }
}

function registerSeedDemo(program: Command): void {
  withGlobalOptions(
    program
      .command('seed-demo <app_id>')
      .description('generate deterministic demo users and events in an app (through the ingestion service)')
      .option('--users <n>', 'number of users', integer(1))
      .option('--days <n>', 'days of activity, ending at --end-date', integer(1))
      .option('--seed <n>', 'random seed: the same seed and sizes give the same data', integer(0))
      .option('--end-date <date>', 'last day of activity, YYYY-MM-DD (default today)'),
  ).action(
    async (appId: string, opts: GlobalOptions & { users?: number; days?: number; seed?: number; endDate?: string }) => {
      const admin = adminClient(opts);
      const result = await call(
        admin,
        admin.client.adminDemoSeed({
          path: { app_id: appId },
          body: defined({ users: opts.users, days: opts.days, seed: opts.seed, end_date: opts.endDate }),
        }),
      );
      print(opts, result, `Generated ${show(result.users)} users and ${show(result.events)} events in app ${appId}.`);
    },
  );
}

export function registerEngagementCommands(program: Command): void {
  registerPush(program);
  registerCampaigns(program);
  registerSeedDemo(program);
}
