// The handler table: every operation of the contract, each with its handler, or NOT_BUILT while
// the issue that builds it is open (it then answers 501 NOT_IMPLEMENTED). The compiler checks the
// table against the contract: a missing, misspelt or wrongly typed handler does not compile.
import type { ServiceContext } from '../context.js';
import { adminHandlers } from './admin.js';
import { analyticsHandlers } from './analytics.js';
import { audienceHandlers } from './audiences.js';
import { campaignHandlers } from './campaigns.js';
import { demoHandlers } from './demo.js';
import { eventHandlers } from './events.js';
import { identityHandlers } from './identity.js';
import { mcpAnalyticsHandlers } from './mcp-analytics.js';
import { mcpResourceHandlers } from './mcp-resources.js';
import type { HandlerTable } from './operations.js';
import { privacyHandlers } from './privacy.js';
import { pushHandlers } from './push.js';
import { rotationHandlers } from './rotation.js';
import { userHandlers } from './users.js';
import { websiteHandlers } from './website.js';

/**
 * Operations not built yet, by the issue that builds them (as `Op_id: NOT_BUILT`, from
 * operations.ts). Nothing else may be NOT_BUILT. Every operation of the contract is built now.
 */
const notBuilt = {} as const;

export function handlers(ctx: ServiceContext): HandlerTable {
  const built = {
    ...eventHandlers(ctx),
    ...userHandlers(ctx),
    ...privacyHandlers(ctx),
    ...audienceHandlers(ctx),
    ...mcpResourceHandlers(ctx),
    ...mcpAnalyticsHandlers(ctx),
    ...adminHandlers(ctx),
    ...rotationHandlers(ctx),
    ...identityHandlers(ctx),
    ...analyticsHandlers(ctx),
    ...demoHandlers(ctx),
    ...pushHandlers(ctx),
    ...campaignHandlers(ctx),
    ...websiteHandlers(ctx),
  };
  // An operation that has a handler must not stay listed as not built (the list would hide it).
  const both = Object.keys(notBuilt).filter((id) => id in built);
  if (both.length > 0) throw new Error(`Built operations still listed as NOT_BUILT: ${both.join(', ')}`);
  return { ...built, ...notBuilt };
}
