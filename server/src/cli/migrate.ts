// Commands that work on the database directly (no server involved): `tally migrate` builds the
// composition root (tally.ts), which opens and migrates DATABASE_URL or the embedded database in
// DATA_DIR, reports and exits (the embedded lock refuses it while a server runs there);
// `tally sandbox-sql` prints the one-time SQL a superuser runs when Tally's own PostgreSQL role
// may not set up the SQL sandbox itself.
import type { Command } from 'commander';
import { CliError, cliConfig, type GlobalOptions, print, withGlobalOptions } from './runtime.js';

export function registerMigrateCommand(program: Command): void {
  withGlobalOptions(
    program
      .command('migrate')
      .summary('run the database migrations and exit')
      .description(
        'Run the database migrations against DATABASE_URL, else the embedded database in DATA_DIR, and exit. ' +
          'Refused while a server holds the embedded database. --url and --admin-token are not used.',
      ),
  ).action(async (opts: GlobalOptions) => {
    const config = cliConfig();
    // Loaded here so that the other commands never pay for the database drivers.
    const { createTally } = await import('../tally.js');
    const { createLogger } = await import('../logger.js');
    const { DataDirLockedError } = await import('../storage/lock.js');
    const { appliedMigrationNames } = await import('../storage/maintenance.js');
    const where = config.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : `the embedded database in ${config.dataDir}`;
    let tally: Awaited<ReturnType<typeof createTally>>;
    try {
      tally = await createTally(config, { logger: createLogger('silent') });
    } catch (err) {
      if (err instanceof DataDirLockedError) {
        throw new CliError(`Refusing to migrate while a server holds the embedded database. ${err.message}`);
      }
      throw new CliError(`Could not migrate ${where}: ${err instanceof Error ? err.message : String(err)}`);
    }
    try {
      const migrations = await appliedMigrationNames(tally.database.knex);
      print(
        opts,
        {
          database: tally.database.kind,
          ...(config.databaseUrl ? {} : { data_dir: config.dataDir }),
          migrations,
        },
        `The schema of ${where} is up to date (${migrations.length} migrations applied, latest ${migrations.at(-1) ?? 'none'}).`,
      );
    } finally {
      await tally.close();
    }
  });
}

export function registerSandboxSqlCommand(program: Command): void {
  withGlobalOptions(
    program
      .command('sandbox-sql')
      .summary("print the SQL that sets up the SQL sandbox's PostgreSQL role")
      .description(
        "Print the SQL a superuser runs once, connected to Tally's database, when Tally's own role (DATABASE_URL) " +
          'is not allowed to set up the SQL sandbox itself: a login role without rights, row-level security, and no ' +
          'EXECUTE on functions that run SQL text or touch the server. Run `tally migrate` first. Then set ' +
          'SANDBOX_DATABASE_URL as the output says. See docs/security.md.',
      ),
  ).action(async (opts: GlobalOptions) => {
    const config = cliConfig();
    if (!config.databaseUrl) throw new CliError('Set DATABASE_URL: the embedded database has no roles to set up.');
    const { connectionIdentity } = await import('../storage/maintenance.js');
    const { newSandboxPassword, sandboxRoleName, sandboxSetupScript } = await import('../sandbox/queries/role.js');
    const { database, user } = await connectionIdentity(config.databaseUrl);
    const password = newSandboxPassword();
    const url = new URL(config.databaseUrl);
    url.username = sandboxRoleName(database);
    url.password = password;
    const sql = sandboxSetupScript(database, user, password);
    print(
      opts,
      { sql, sandbox_database_url: url.toString() },
      `${sql}-- Then start Tally with SANDBOX_DATABASE_URL=${url.toString()}`,
    );
  });
}
