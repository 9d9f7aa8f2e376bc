// MCP resources (resources/list, resources/read), with tally:// URIs: an app, its event
// dictionary, an audience, a campaign. Each reads the same view as the matching resource-style GET, within
// the key's organization (another organization's id is not found). Their contents are data
// recorded by the app: the descriptions say so.

import { type McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { appForMcpKey } from '../admin/access.js';
import { resourceIndex } from '../analytics/app-usage.js';
import { eventDictionary } from '../analytics/event-dictionary.js';
import { appView, audienceView } from '../analytics/resource-views.js';
import { campaignDetail } from '../engagement/campaign-views.js';
import { campaignsOf, organizationCampaign } from '../engagement/campaigns.js';
import { AppError } from '../errors.js';
import type { ToolBinding } from './tool.js';

const json = (uri: URL, data: unknown) => ({
  contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(data, null, 2) }],
});

/** A resource that is not ours to show reads as not found, whatever the reason. */
async function guarded<T>(uri: URL, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof AppError && err.status < 500) {
      throw new McpError(ErrorCode.InvalidParams, `Resource ${uri.href} not found: ${err.message}`);
    }
    throw err;
  }
}

export function registerResources(server: McpServer, { ctx, principal }: ToolBinding): void {
  const organizationId = principal.organizationId;
  const index = () => resourceIndex(ctx, organizationId);
  const appOf = (id: unknown) => appForMcpKey(ctx.db, principal, String(id));

  server.registerResource(
    'app',
    new ResourceTemplate('tally://apps/{appId}', {
      list: async () => ({
        resources: (await index()).apps.map((a) => ({
          uri: `tally://apps/${a.id}`,
          name: a.name,
          mimeType: 'application/json',
        })),
      }),
    }),
    {
      title: 'App',
      description: 'An app of the organization: its usage totals and most frequent events (data recorded by the app).',
      mimeType: 'application/json',
    },
    (uri, { appId }) => guarded(uri, async () => json(uri, await appView(ctx, await appOf(appId)))),
  );

  server.registerResource(
    'event-dictionary',
    new ResourceTemplate('tally://apps/{appId}/event-dictionary', {
      list: async () => ({
        resources: (await index()).apps.map((a) => ({
          uri: `tally://apps/${a.id}/event-dictionary`,
          name: `${a.name}: tracked events`,
          mimeType: 'application/json',
        })),
      }),
    }),
    {
      title: 'Event dictionary',
      description: 'Every event an app has tracked, with definitions and 30-day volumes (data recorded by the app).',
      mimeType: 'application/json',
    },
    (uri, { appId }) =>
      guarded(uri, async () =>
        json(uri, await eventDictionary(ctx, await appOf(appId), { includeArchived: true, limit: 500 })),
      ),
  );

  server.registerResource(
    'audience',
    new ResourceTemplate('tally://audiences/{audienceId}', {
      list: async () => ({
        resources: (await index()).audiences.map((a) => ({
          uri: `tally://audiences/${a.id}`,
          name: a.name,
          mimeType: 'application/json',
        })),
      }),
    }),
    {
      title: 'Audience',
      description: 'An audience with its criteria and first 100 members (data recorded by the app).',
      mimeType: 'application/json',
    },
    (uri, { audienceId }) =>
      guarded(uri, async () => json(uri, await audienceView(ctx, organizationId, String(audienceId)))),
  );

  server.registerResource(
    'campaign',
    new ResourceTemplate('tally://campaigns/{campaignId}', {
      list: async () => {
        const resources = [];
        for (const a of (await index()).apps) {
          const { rows } = await campaignsOf(ctx, await appOf(a.id), { limit: 100 });
          for (const c of rows)
            resources.push({ uri: `tally://campaigns/${c.id}`, name: c.name, mimeType: 'application/json' });
        }
        return { resources };
      },
    }),
    {
      title: 'Campaign',
      description:
        'A push campaign with its state, content, delivery counters, rates and performance (names and text are data recorded by the app).',
      mimeType: 'application/json',
    },
    (uri, { campaignId }) =>
      guarded(uri, async () => {
        const { campaign, app } = await organizationCampaign(ctx, organizationId, String(campaignId));
        return json(uri, await campaignDetail(ctx, app, campaign));
      }),
  );
}
