// POST /v1/audiences and GET /v1/audiences.
import type { Request, Response } from 'express';
import type { AudienceInput } from '../services/audiences.js';
import { createAudience, listAudiencesPage } from '../services/audiences.js';
import type { ServiceContext } from '../services/context.js';
import type { AudienceRow } from '../storage/audiences.js';
import { requestApp } from './access.js';

const summary = (a: AudienceRow) => ({
  audience_id: a.id,
  name: a.name,
  description: a.description,
  user_count: Number(a.user_count),
  created_at: a.created_at.toISOString(),
  updated_at: a.updated_at.toISOString(),
});

export function audienceHandlers(ctx: ServiceContext) {
  return {
    Audiences_create: async (req: Request, res: Response) => {
      const created = await createAudience(ctx, requestApp(req).id, req.body as AudienceInput);
      const { audience, userCount, understood } = created;
      const users = `${userCount} user${userCount === 1 ? '' : 's'}`;
      res.json({
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
      });
    },
    Audiences_list: async (req: Request, res: Response) => {
      const { limit, offset } = req.query as unknown as { limit: number; offset: number };
      const { audiences, total } = await listAudiencesPage(ctx, requestApp(req).id, { limit, offset });
      res.json({
        success: true,
        audiences: audiences.map(summary),
        pagination: { total, limit, offset, has_more: offset + limit < total },
      });
    },
  };
}
