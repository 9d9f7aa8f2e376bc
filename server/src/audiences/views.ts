// What callers see of audiences, built once here and typed with the contract: the new audience
// (POST /v1/audiences, and the MCP tool create_audience, which returns part of the same body), the
// REST page of audiences, and the MCP views (a reference in the resource index, the list with
// counts, the detail with its first members).
import type {
  AudienceCreated,
  AudiencePage,
  AudienceSummary,
  McpAudienceDetail,
  McpAudienceEntry,
  McpAudienceList,
  McpAudienceRef,
} from '@tally/client';
import type { AudienceMember, CreatedAudience } from './audiences.js';
import type { AudienceRow } from './queries/audiences.js';

export function createdAudienceView(created: CreatedAudience): AudienceCreated {
  const { audience, userCount, understood } = created;
  const users = `${userCount} user${userCount === 1 ? '' : 's'}`;
  return {
    success: true,
    audience_id: audience.id,
    name: audience.name,
    user_count: userCount,
    created_at: audience.created_at.toISOString(),
    message: understood
      ? `Audience created with ${users}, understood as: ${understood}.`
      : `Audience created with ${users} from SQL written by the language model.`,
    query_method: created.queryMethod,
    confidence: created.confidence,
    ...(understood ? { interpretation: understood } : {}),
  };
}

/** What create_audience returns: the REST body without its envelope, creation time and message. */
export type CreatedAudienceBrief = Omit<AudienceCreated, 'success' | 'created_at' | 'message'> &
  Required<Pick<AudienceCreated, 'query_method' | 'confidence'>>;

export function createdAudienceBrief(created: CreatedAudience): CreatedAudienceBrief {
  const { success: _s, created_at: _c, message: _m, ...brief } = createdAudienceView(created);
  return { ...brief, query_method: created.queryMethod, confidence: created.confidence };
}

export const audienceSummaryView = (a: AudienceRow): AudienceSummary => ({
  audience_id: a.id,
  name: a.name,
  description: a.description,
  user_count: Number(a.user_count),
  created_at: a.created_at.toISOString(),
  updated_at: a.updated_at.toISOString(),
});

/** GET /v1/audiences: one page of the app's audiences. */
export function audiencePageView(
  page: { audiences: AudienceRow[]; total: number },
  limit: number,
  offset: number,
): AudiencePage {
  return {
    success: true,
    audiences: page.audiences.map(audienceSummaryView),
    pagination: { total: page.total, limit, offset, has_more: offset + limit < page.total },
  };
}

export const audienceRefView = (a: AudienceRow): McpAudienceRef => ({
  id: a.id,
  name: a.name,
  description: a.description,
  type: 'audience',
  app_id: a.app_id,
  uri: `/mcp/resources/audiences/${a.id}`,
});

export const audienceEntryView = (a: AudienceRow): McpAudienceEntry => ({
  ...audienceRefView(a),
  user_count: Number(a.user_count),
});

/** GET /mcp/resources/audiences. */
export const audienceListView = (audiences: AudienceRow[]): McpAudienceList => ({
  audiences: audiences.map(audienceEntryView),
});

/** GET /mcp/resources/audiences/{id} and the resource tally://audiences/{id}. */
export function audienceDetailView(detail: {
  audience: AudienceRow;
  users: AudienceMember[];
  total: number;
}): McpAudienceDetail {
  const { audience: a, users, total } = detail;
  return {
    id: a.id,
    name: a.name,
    description: a.description,
    criteria: a.criteria,
    app_id: a.app_id,
    user_count: total,
    created_at: a.created_at.toISOString(),
    updated_at: a.updated_at.toISOString(),
    users: users.map((u) => ({ user_id: u.user_id, email: u.email, last_active: u.last_active })),
    users_total: total,
  };
}
