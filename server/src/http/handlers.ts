// The handler table: contract operationId -> handler. Operations absent here answer 501.
import type { ServiceContext } from '../services/context.js';
import { adminHandlers } from './admin.js';
import { analyticsHandlers } from './analytics.js';
import { audienceHandlers } from './audiences.js';
import { demoHandlers } from './demo.js';
import type { HandlerTable } from './dispatch.js';
import { eventHandlers } from './events.js';
import { identityHandlers } from './identity.js';
import { mcpResourceHandlers } from './mcp-resources.js';
import { pushHandlers } from './push.js';
import { userHandlers } from './users.js';
import { websiteHandlers } from './website.js';

export function handlers(ctx: ServiceContext): HandlerTable {
  return {
    ...eventHandlers(ctx),
    ...userHandlers(ctx),
    ...audienceHandlers(ctx),
    ...mcpResourceHandlers(ctx),
    ...adminHandlers(ctx),
    ...identityHandlers(ctx),
    ...analyticsHandlers(ctx),
    ...demoHandlers(ctx),
    ...pushHandlers(ctx),
    ...websiteHandlers(ctx),
  };
}
