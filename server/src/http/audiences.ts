// POST /v1/audiences and GET /v1/audiences.
import { createAudience, listAudiencesPage } from '../audiences/audiences.js';
import type { AudienceRow } from '../audiences/queries/audiences.js';
import type { ServiceContext } from '../context.js';
import { requireApp } from './context.js';
import type { Handlers } from './operations.js';

const summary = (a: AudienceRow) => ({
  audience_id: a.id,
  name: a.name,
  description: a.description,
  user_count: Number(a.user_count),
  created_at: a.created_at.toISOString(),
  updated_at: a.updated_at.toISOString(),
});

export function audienceHandlers(ctx: ServiceContext): Handlers<'Audiences_create' | 'Audiences_list'> {
  return {
    Audiences_create: async ({ body }, request) => {
      const created = await createAudience(ctx, requireApp(request).id, body);
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
    },
    Audiences_list: async ({ query }, request) => {
      const { limit = 50, offset = 0 } = query;
      const { audiences, total } = await listAudiencesPage(ctx, requireApp(request).id, { limit, offset });
      return {
        success: true,
        audiences: audiences.map(summary),
        pagination: { total, limit, offset, has_more: offset + limit < total },
      };
    },
  };
}
