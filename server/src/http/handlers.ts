// The handler table: contract operationId -> handler. Operations absent here answer 501.
import type { ServiceContext } from '../services/context.js';
import { adminHandlers } from './admin.js';
import type { HandlerTable } from './dispatch.js';
import { eventHandlers } from './events.js';
import { mcpResourceHandlers } from './mcp-resources.js';
import { userHandlers } from './users.js';

export function handlers(ctx: ServiceContext): HandlerTable {
  return {
    ...eventHandlers(ctx),
    ...userHandlers(ctx),
    ...mcpResourceHandlers(ctx),
    ...adminHandlers(ctx),
  };
}
