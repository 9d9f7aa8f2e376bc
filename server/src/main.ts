// Entry point of `npm start`: read configuration, start the server, stop cleanly on signals.
import { recordServerAddress } from './admin/server-address.js';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { startServer } from './server.js';
import { DataDirLockedError } from './storage/lock.js';

async function main() {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const running = await startServer(config, logger);
  const where = config.databaseUrl ? 'PostgreSQL' : `embedded database in ${config.dataDir}`;
  logger.info({ url: running.url, storage: running.database.kind }, `Tally is listening on ${running.url} (${where})`);
  // for the `tally` command on this machine: the address, in the data directory
  const forgetAddress = recordServerAddress(config.dataDir, running.url);
  if (running.credentials) {
    const c = running.credentials;
    process.stdout.write(
      [
        '',
        'Tally created a default organization and app. These keys are shown once; they are also',
        `saved (readable only by you) in ${config.dataDir}/credentials.json.`,
        '',
        `  API key (REST):   ${c.api_key}`,
        `  MCP API key:      ${c.mcp_api_key}`,
        `  Admin token:      ${c.admin_token}`,
        `  App id:           ${c.app_id}`,
        '',
        `Try:  curl -H "Authorization: Bearer ${c.api_key}" -H "Content-Type: application/json" \\`,
        `        -d '{"event_name":"signup","user_id":"user-1"}' ${running.url}/v1/events`,
        '',
      ].join('\n'),
    );
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    forgetAddress();
    await running.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof DataDirLockedError) {
    process.stderr.write(`${err.message}\n`);
  } else {
    process.stderr.write(`Tally could not start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
});
