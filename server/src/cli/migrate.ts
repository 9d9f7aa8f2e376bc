// `tally migrate`: runs the migrations against DATABASE_URL or the embedded database in DATA_DIR
// directly (no server involved) and exits. The embedded lock refuses it while a server runs there.
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
    const { openDatabase } = await import('../storage/db.js');
    const { DataDirLockedError } = await import('../storage/lock.js');
    const where = config.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : `the embedded database in ${config.dataDir}`;
    let db: Awaited<ReturnType<typeof openDatabase>>;
    try {
      db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
    } catch (err) {
      if (err instanceof DataDirLockedError) {
        throw new CliError(`Refusing to migrate while a server holds the embedded database. ${err.message}`);
      }
      throw new CliError(`Could not migrate ${where}: ${err instanceof Error ? err.message : String(err)}`);
    }
    try {
      const rows: { name: string }[] = await db.knex('knex_migrations').select('name').orderBy('id');
      const migrations = rows.map((r) => r.name);
      print(
        opts,
        {
          database: db.kind,
          ...(config.databaseUrl ? {} : { data_dir: config.dataDir }),
          migrations,
        },
        `The schema of ${where} is up to date (${migrations.length} migrations applied, latest ${migrations.at(-1) ?? 'none'}).`,
      );
    } finally {
      await db.close();
    }
  });
}
