// First start on an empty database: a default organization and app, a REST key, an MCP key and an
// admin token, written once to <DATA_DIR>/credentials.json (mode 0600) and printed.
import fs from 'node:fs';
import path from 'node:path';
import { uuidv7 } from '../ids.js';
import { type Db, inTransaction } from '../storage/handle.js';
import { anyOrganizationExists, insertApp, insertOrganization, takeBootstrapLock } from '../storage/tenancy.js';
import { createKey, issueAdminToken } from './keys.js';

export interface Credentials {
  admin_token: string;
  organization_id: string;
  app_id: string;
  api_key: string;
  mcp_api_key: string;
}

/** Creates the defaults when no organization exists; returns the credentials, or null if there was nothing to do. */
export async function bootstrapIfEmpty(db: Db, adminToken: string | undefined): Promise<Credentials | null> {
  return inTransaction(db, async (tx) => {
    // One bootstrap even when two instances start together on one PostgreSQL.
    await takeBootstrapLock(tx);
    if (await anyOrganizationExists(tx)) return null;
    const org = await insertOrganization(tx, { id: uuidv7(), name: 'Default organization' });
    const app = await insertApp(tx, { id: uuidv7(), organization_id: org.id, name: 'Default app' });
    const rest = await createKey(tx, app, { kind: 'rest', name: 'default' });
    const mcp = await createKey(tx, app, { kind: 'mcp', name: 'default', permissions: ['read', 'write'] });
    const token = adminToken ?? (await issueAdminToken(tx, new Date())).token;
    return {
      admin_token: token,
      organization_id: org.id,
      app_id: app.id,
      api_key: rest.secret,
      mcp_api_key: mcp.secret,
    };
  });
}

export function writeCredentials(dataDir: string, credentials: Credentials): string {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'credentials.json');
  fs.writeFileSync(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return file;
}
