// What callers see of analytics, each body built once here from what the analytics services
// return, and typed with the contract where the contract names it: a metric series (GET
// /v1/analytics/metrics and get_metrics), a query's answer (POST /v1/analytics/query and
// query_analytics), a page of events (GET /mcp/events and query_events), a funnel (GET
// /mcp/analytics/funnels and get_funnel), engagement and one event's analytics (their MCP GETs),
// the resource index and an app with its usage (GET /mcp/resources and the tally://apps resource),
// an app's versions (GET /mcp/resources/apps/{id}/versions and get_app_versions), and the event
// dictionary (list_event_dictionary, update_event_definition and the event-dictionary resource).
import type {
  AnalyticsQueryResult,
  McpApp,
  McpAppVersions,
  McpEngagement,
  McpEventAnalytics,
  McpEventPage,
  McpFunnel,
  McpResourceIndex,
  MetricSeries,
} from '@tally/client';
import { appVersionView } from '../admin/views.js';
import type { AudienceRow } from '../audiences/queries/audiences.js';
import { audienceRefView } from '../audiences/views.js';
import type { AppRow } from '../storage/tenancy.js';
import type { EngagementReport } from './engagement.js';
import type { EventReport } from './event-analytics.js';
import type { EventSearchPage } from './event-search.js';
import type { MeasuredFunnel } from './funnels.js';
import type { AppMetricSeries } from './metrics.js';
import type { AppTotals, AppVersionRow } from './queries/app-usage.js';
import type { EventDefinitionRow } from './queries/event-dictionary.js';
import type { QueryAnswer } from './query.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const metricSeriesView = (s: AppMetricSeries): MetricSeries => ({
  success: true,
  metric: s.metric,
  data: s.points,
  metadata: { app_id: s.appId, start_date: s.startDate, end_date: s.endDate, granularity: s.granularity },
});

/** A query's answer; the fields the contract leaves optional are always given, but `sql` when none ran. */
export const queryResultView = (
  answer: QueryAnswer,
): Required<Omit<AnalyticsQueryResult, 'sql'>> & Pick<AnalyticsQueryResult, 'sql'> => ({
  success: true,
  data: answer.rows,
  query_time_ms: answer.queryTimeMs,
  rows_returned: answer.rows.length,
  sql: answer.sql,
  query_method: answer.method,
  interpretation: answer.interpretation,
  truncated: answer.truncated,
});

export const eventPageView = (page: EventSearchPage): McpEventPage => ({
  events: page.events.map((e) => ({
    id: e.id,
    app_id: e.app_id,
    user_id: e.user_id,
    event_name: e.event_name,
    properties: e.properties,
    created_at: e.created_at.toISOString(),
  })),
  pagination: { total: page.total, limit: page.limit, offset: page.offset, has_more: page.hasMore },
});

export const funnelView = (app: AppRow, f: MeasuredFunnel): McpFunnel => ({
  app_id: app.id,
  funnel: { events: f.events, time_window: f.timeWindow },
  steps: f.report.steps,
  overall_conversion: f.report.overall_conversion,
  analysis: f.report.analysis,
});

export const engagementView = (app: AppRow, report: EngagementReport): McpEngagement => ({
  app_id: app.id,
  ...report,
});

export const eventAnalyticsView = (app: AppRow, eventName: string, report: EventReport): McpEventAnalytics => ({
  event_name: eventName,
  app_id: app.id,
  ...report,
});

export const resourceIndexView = (index: { apps: AppRow[]; audiences: AudienceRow[] }): McpResourceIndex => ({
  resources: {
    apps: index.apps.map((a) => ({
      id: a.id,
      name: a.name,
      description: a.description,
      type: 'app',
      uri: `/mcp/resources/apps/${a.id}`,
    })),
    audiences: index.audiences.map(audienceRefView),
  },
});

export const appResourceView = (
  app: AppRow,
  usage: { totals: AppTotals; topEvents: { name: string; count: number }[] },
): McpApp => ({
  id: app.id,
  name: app.name,
  description: app.description,
  created_at: app.created_at.toISOString(),
  updated_at: app.updated_at.toISOString(),
  stats: { users: usage.totals.users, events: usage.totals.events, last_activity: iso(usage.totals.lastActivity) },
  top_events: usage.topEvents,
});

export const versionHistoryView = (
  app: AppRow,
  history: { versions: AppVersionRow[]; current: string | null },
): McpAppVersions => ({
  app_id: app.id,
  app_name: app.name,
  current_version: history.current,
  versions: history.versions.map(appVersionView),
  total: history.versions.length,
});

/** One entry of the event dictionary; "defined" once it has a description. */
export interface DictionaryEntry {
  id: string;
  event_name: string;
  display_name: string | null;
  description: string | null;
  category: string | null;
  archived: boolean;
  defined: boolean;
  first_seen: string;
  last_seen: string;
  volume_30d: number;
  properties: Record<string, string>;
}

export const dictionaryEntryView = (r: EventDefinitionRow): DictionaryEntry => ({
  id: r.id,
  event_name: r.event_name,
  display_name: r.display_name,
  description: r.description,
  category: r.category,
  archived: r.archived,
  defined: Boolean(r.description && r.description.trim() !== ''),
  first_seen: r.first_seen.toISOString(),
  last_seen: r.last_seen.toISOString(),
  volume_30d: r.volume_30d,
  properties: r.properties,
});

/** A page of the event dictionary (the contract has no REST twin: list_event_dictionary's schema is its shape). */
export interface DictionaryPage {
  app_id: string;
  events: DictionaryEntry[];
  total: number;
  has_more: boolean;
}

export const eventDictionaryView = (
  app: AppRow,
  page: { rows: EventDefinitionRow[]; total: number; hasMore: boolean },
): DictionaryPage => ({
  app_id: app.id,
  events: page.rows.map(dictionaryEntryView),
  total: page.total,
  has_more: page.hasMore,
});
