// POST /v1/audiences and GET /v1/audiences.
import { createAudience, listAudiencesPage } from '../audiences/audiences.js';
import { audiencePageView, createdAudienceView } from '../audiences/views.js';
import type { ServiceContext } from '../context.js';
import { requireApp } from './context.js';
import type { Handlers } from './operations.js';

export function audienceHandlers(ctx: ServiceContext): Handlers<'Audiences_create' | 'Audiences_list'> {
  return {
    Audiences_create: async ({ body }, request) =>
      createdAudienceView(await createAudience(ctx, requireApp(request).id, body)),
    Audiences_list: async ({ query }, request) => {
      const { limit = 50, offset = 0 } = query;
      return audiencePageView(await listAudiencesPage(ctx, requireApp(request).id, { limit, offset }), limit, offset);
    },
  };
}
