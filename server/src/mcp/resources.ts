// MCP resources (resources/list, resources/read), with tally:// URIs: an app, its event
// dictionary, an audience, a campaign. Each reads the same view as the matching resource-style GET
// or tool, within the key's organization (another organization's id is not found). Their contents
// are data recorded by the app: the descriptions say so.

import { type McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { appForMcpKey } from '../admin/access.js';
import { appUsage, resourceIndex } from '../analytics/app-usage.js';
import { eventDictionary } from '../analytics/event-dictionary.js';
import { appResourceView, eventDictionaryView } from '../analytics/views.js';
import { organizationAudience } from '../audiences/members.js';
import { audienceDetailView } from '../audiences/views.js';
import { campaignReport } from '../engagement/campaign-reports.js';
import { campaignsOf, organizationCampaign } from '../engagement/campaigns.js';
import { campaignDetailView } from '../engagement/views.js';
import { AppError } from '../errors.js';
import type { ToolBinding } from './tool.js';

/** One kind of resource: its URI template, how its instances are listed, and how one is read. */
interface ResourceKind {
  name: string;
  template: string;
  title: string;
  description: string;
  list(): Promise<{ uri: string; name: string }[]>;
  /** The resource's body, from the template's one variable. */
  read(id: string): Promise<unknown>;
}

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

function register(server: McpServer, kind: ResourceKind): void {
  const variable = /\{(\w+)\}/.exec(kind.template)![1]!;
  server.registerResource(
    kind.name,
    new ResourceTemplate(kind.template, {
      list: async () => ({
        resources: (await kind.list()).map((r) => ({ ...r, mimeType: 'application/json' })),
      }),
    }),
    { title: kind.title, description: kind.description, mimeType: 'application/json' },
    (uri, variables) =>
      guarded(uri, async () => {
        const text = JSON.stringify(await kind.read(String(variables[variable])), null, 2);
        return { contents: [{ uri: uri.href, mimeType: 'application/json', text }] };
      }),
  );
}

/** The four kinds, for the key's organization. */
function resourceKinds({ ctx, principal }: ToolBinding): ResourceKind[] {
  const organizationId = principal.organizationId;
  const index = () => resourceIndex(ctx, organizationId);
  const appOf = (id: string) => appForMcpKey(ctx.db, principal, id);
  return [
    {
      name: 'app',
      template: 'tally://apps/{appId}',
      title: 'App',
      description: 'An app of the organization: its usage totals and most frequent events (data recorded by the app).',
      list: async () => (await index()).apps.map((a) => ({ uri: `tally://apps/${a.id}`, name: a.name })),
      read: async (id) => {
        const app = await appOf(id);
        return appResourceView(app, await appUsage(ctx, app));
      },
    },
    {
      name: 'event-dictionary',
      template: 'tally://apps/{appId}/event-dictionary',
      title: 'Event dictionary',
      description: 'Every event an app has tracked, with definitions and 30-day volumes (data recorded by the app).',
      list: async () =>
        (await index()).apps.map((a) => ({
          uri: `tally://apps/${a.id}/event-dictionary`,
          name: `${a.name}: tracked events`,
        })),
      read: async (id) => {
        const app = await appOf(id);
        return eventDictionaryView(app, await eventDictionary(ctx, app, { includeArchived: true, limit: 500 }));
      },
    },
    {
      name: 'audience',
      template: 'tally://audiences/{audienceId}',
      title: 'Audience',
      description: 'An audience with its criteria and first 100 members (data recorded by the app).',
      list: async () => (await index()).audiences.map((a) => ({ uri: `tally://audiences/${a.id}`, name: a.name })),
      read: async (id) => audienceDetailView(await organizationAudience(ctx, organizationId, id)),
    },
    {
      name: 'campaign',
      template: 'tally://campaigns/{campaignId}',
      title: 'Campaign',
      description:
        'A push campaign with its state, content, delivery counters, rates and performance (names and text are data recorded by the app).',
      list: async () => {
        const resources = [];
        for (const a of (await index()).apps) {
          const { rows } = await campaignsOf(ctx, await appOf(a.id), { limit: 100 });
          for (const c of rows) resources.push({ uri: `tally://campaigns/${c.id}`, name: c.name });
        }
        return resources;
      },
      read: async (id) => {
        const { campaign, app } = await organizationCampaign(ctx, organizationId, id);
        return campaignDetailView(await campaignReport(ctx, app, campaign));
      },
    },
  ];
}

export function registerResources(server: McpServer, binding: ToolBinding): void {
  for (const kind of resourceKinds(binding)) register(server, kind);
}
