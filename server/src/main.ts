// Entry point of `npm start`: read configuration, start the server, stop cleanly on SIGTERM or SIGINT.

import type { Logger } from 'pino';
import { recordServerAddress } from './admin/server-address.js';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { type RunningServer, startServer } from './server.js';
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
  stopOnSignals(running, logger, config.shutdownGraceMs, forgetAddress);
}

/** Exit codes of a process ended by a second signal, as a shell reports a death by that signal. */
const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;
/** Time the shutdown may take beyond the grace period (events, jobs, database) before the process exits anyway. */
const SHUTDOWN_MARGIN_MS = 30_000;

/**
 * SIGTERM or SIGINT shuts down gracefully (server.ts, `close()`) and exits 0; a second signal
 * exits at once with 130 (SIGINT) or 143 (SIGTERM), and so, with 1, does a shutdown that hangs.
 */
function stopOnSignals(running: RunningServer, logger: Logger, graceMs: number, forgetAddress: () => void): void {
  let stopping = false;
  const stop = (signal: keyof typeof SIGNAL_EXIT_CODES) => {
    if (stopping) {
      logger.warn({ signal }, 'shutdown: second signal, exiting at once');
      process.exit(SIGNAL_EXIT_CODES[signal]);
    }
    stopping = true;
    logger.info({ signal, graceMs }, `shutdown: ${signal} received`);
    forgetAddress(); // the CLI no longer finds this instance
    setTimeout(() => {
      logger.error('shutdown: still not done after the grace period and its margin; exiting');
      process.exit(1);
    }, graceMs + SHUTDOWN_MARGIN_MS).unref();
    running.close().then(
      () => {
        logger.info('shutdown: complete');
        process.exit(0);
      },
      (err) => {
        logger.error({ err }, 'shutdown: failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof DataDirLockedError) {
    process.stderr.write(`${err.message}\n`);
  } else {
    process.stderr.write(`Tally could not start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
});
