// completion/complete: suggestions for the arguments of our prompts and the variables of our
// resource templates (app ids, audience and campaign ids, event names, property keys), read from
// the caller's own organization only. An app id is suggested when the typed text starts its id
// or appears in its name; names match anywhere, case aside, those starting with the text first.
// A prompt or template we do not have is -32602, as the protocol asks.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CompleteRequestSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { resourceIndex } from '../analytics/app-usage.js';
import { campaignsOf } from '../engagement/campaigns.js';
import { appLexicon } from '../language/service.js';
import type { AppRow } from '../storage/tenancy.js';
import type { ToolBinding } from './tool.js';

/** The most values one answer carries (the protocol's limit). */
const MAX_VALUES = 100;

type Completer = (value: string, context: Record<string, string>) => Promise<string[]>;

/** `items` whose label contains `typed` (case aside), those starting with it first. */
function matching<T>(items: T[], typed: string, labels: (item: T) => string[]): T[] {
  const t = typed.toLowerCase();
  const rank = (item: T) => {
    const ls = labels(item).map((l) => l.toLowerCase());
    if (ls.some((l) => l.startsWith(t))) return 0;
    return ls.some((l) => l.includes(t)) ? 1 : 2;
  };
  return items
    .map((item, i) => ({ item, i, r: rank(item) }))
    .filter((x) => x.r < 2)
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((x) => x.item);
}

const unique = (values: string[]) => [...new Set(values)];

/** Completes the last item of a comma-separated list (`view_item,add` -> `view_item,add_to_cart`). */
function lastOfList(complete: Completer): Completer {
  return async (value, context) => {
    const cut = value.lastIndexOf(',');
    const head = value.slice(0, cut + 1);
    return (await complete(value.slice(cut + 1).trimStart(), context)).map((v) => head + v);
  };
}

function sources({ ctx, principal }: ToolBinding) {
  const index = () => resourceIndex(ctx, principal.organizationId);
  /** The app the other arguments name (when it is the organization's), else every app of the organization. */
  const appsInScope = async (context: Record<string, string>): Promise<AppRow[]> => {
    const { apps } = await index();
    const named = Object.hasOwn(context, 'app_id') ? context.app_id : undefined;
    return named === undefined ? apps : apps.filter((a) => a.id === named);
  };
  const apps: Completer = async (value) =>
    matching((await index()).apps, value, (a) => [a.id, a.name]).map((a) => a.id);
  const audiences: Completer = async (value) =>
    matching((await index()).audiences, value, (a) => [a.id, a.name]).map((a) => a.id);
  const campaigns: Completer = async (value) => {
    const all = [];
    for (const app of (await index()).apps) all.push(...(await campaignsOf(ctx, app, { limit: 100 })).rows);
    return matching(all, value, (c) => [c.id, c.name]).map((c) => c.id);
  };
  const events: Completer = async (value, context) => {
    const names: string[] = [];
    for (const app of await appsInScope(context))
      names.push(...(await appLexicon(ctx, app.id)).events.map((e) => e.name));
    return matching(unique(names), value, (n) => [n]);
  };
  const propertyKeys: Completer = async (value, context) => {
    const keys: string[] = [];
    for (const app of await appsInScope(context)) {
      const lexicon = await appLexicon(ctx, app.id);
      keys.push(...lexicon.userProperties.keys(), ...lexicon.events.flatMap((e) => e.properties.map((p) => p.key)));
    }
    return matching(unique(keys), value, (k) => [k]);
  };
  return { apps, audiences, campaigns, events, propertyKeys };
}

/** Registers the completion/complete handler (the `completions` capability). */
export function handleCompletions(server: McpServer, call: ToolBinding): void {
  const s = sources(call);
  // Maps, not objects: names come from the client ("constructor" is not one of our prompts).
  const prompts = new Map<string, Map<string, Completer>>([
    ['weekly_engagement_report', new Map([['app_id', s.apps]])],
    [
      'funnel_diagnosis',
      new Map([
        ['app_id', s.apps],
        ['events', lastOfList(s.events)],
        ['compare_by', s.propertyKeys],
      ]),
    ],
  ]);
  const templates = new Map<string, Map<string, Completer>>([
    ['tally://apps/{appId}', new Map([['appId', s.apps]])],
    ['tally://apps/{appId}/event-dictionary', new Map([['appId', s.apps]])],
    ['tally://audiences/{audienceId}', new Map([['audienceId', s.audiences]])],
    ['tally://campaigns/{campaignId}', new Map([['campaignId', s.campaigns]])],
  ]);
  server.server.setRequestHandler(CompleteRequestSchema, async ({ params }) => {
    const { ref, argument } = params;
    const table = ref.type === 'ref/prompt' ? prompts.get(ref.name) : templates.get(ref.uri);
    if (!table) {
      const what = ref.type === 'ref/prompt' ? `prompt ${JSON.stringify(ref.name)}` : `resource template ${ref.uri}`;
      throw new McpError(ErrorCode.InvalidParams, `There is no ${what} on this server.`);
    }
    const complete = table.get(argument.name);
    const values = complete ? await complete(argument.value, params.context?.arguments ?? {}) : [];
    return {
      completion: { values: values.slice(0, MAX_VALUES), total: values.length, hasMore: values.length > MAX_VALUES },
    };
  });
}
