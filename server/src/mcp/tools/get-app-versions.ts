// get_app_versions: an app's release history, as GET /mcp/resources/apps/{appId}/versions.
import { z } from 'zod';
import { appForMcpKey } from '../../admin/access.js';
import { appVersionHistory } from '../../analytics/app-usage.js';
import { versionHistoryView } from '../../analytics/views.js';
import { ValidationError } from '../../errors.js';
import { appIdArgument, defineTool, textOrNull } from '../tool.js';

const instant = z.string().max(64);

function parseInstant(value: string | undefined, path: string): Date | undefined {
  if (value === undefined) return undefined;
  const when = new Date(value);
  if (Number.isNaN(when.getTime()))
    throw new ValidationError(`${path} is not an ISO 8601 date or date-time.`, [
      { path, message: 'is not an ISO 8601 date or date-time' },
    ]);
  return when;
}

export const getAppVersions = defineTool({
  name: 'get_app_versions',
  title: 'Get app versions',
  description:
    "Returns an app's release history: each version with its release notes, when it was released and who recorded it, " +
    'latest first, and the current version (the latest released). start_date and end_date (ISO 8601 dates or date-times) ' +
    'keep only the versions released in that range, inclusive. Use it to relate changes in metrics to releases.',
  input: {
    app_id: appIdArgument,
    start_date: instant.optional().describe('Only versions released on or after this date (ISO 8601).'),
    end_date: instant.optional().describe('Only versions released on or before this date (ISO 8601).'),
  },
  output: {
    app_id: z.string(),
    app_name: z.string(),
    current_version: textOrNull('The version with the latest release time, or null when none is recorded.'),
    versions: z.array(
      z.object({
        id: z.string(),
        version: z.string(),
        release_notes: textOrNull('The release notes, or null.'),
        released_at: z.string(),
        created_by: textOrNull('Who recorded the version, or null.'),
      }),
    ),
    total: z.number(),
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  writes: false,
  async run(args, { ctx, principal }) {
    const app = await appForMcpKey(ctx.db, principal, args.app_id);
    const from = parseInstant(args.start_date, '/start_date');
    let to = parseInstant(args.end_date, '/end_date');
    // A date alone means the whole day.
    if (to && args.end_date && /^\d{4}-\d{2}-\d{2}$/.test(args.end_date)) to = new Date(to.getTime() + 86_399_999);
    return versionHistoryView(app, await appVersionHistory(ctx, app, { from, to }));
  },
  summary: (r) =>
    `${r.total} version${r.total === 1 ? '' : 's'}; the current one is ${r.current_version ?? 'not recorded yet'}.`,
});
