// The `tally` command: an operator's client of the admin API (through @tally/client), plus
// `migrate`, which works on the database directly. See docs/cli.md for the reference.
import { Command } from 'commander';
import { registerEngagementCommands } from './cli/engagement.js';
import { registerMigrateCommand, registerSandboxSqlCommand } from './cli/migrate.js';
import { registerPrivacyCommands } from './cli/privacy.js';
import { registerRotationCommands } from './cli/rotation.js';
import { CliError } from './cli/runtime.js';
import { registerTenancyCommands } from './cli/tenancy.js';

export function buildProgram(): Command {
  const program = new Command('tally')
    .description(
      'Operate a Tally server: organizations, apps, keys, push, campaigns, demo data, audit trails, rotations, migrations.',
    )
    .showHelpAfterError('(add --help for usage)')
    .showSuggestionAfterError();
  registerTenancyCommands(program);
  registerEngagementCommands(program);
  registerPrivacyCommands(program);
  registerRotationCommands(program);
  registerMigrateCommand(program);
  registerSandboxSqlCommand(program);
  return program;
}

// `tally users export ... | head`: when the reader of our output goes away, stop quietly, as
// Unix tools do, instead of failing with EPIPE.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}

try {
  await buildProgram().parseAsync(process.argv);
} catch (err) {
  if (err instanceof CliError) {
    process.stderr.write(`tally: ${err.message}\n`);
    process.exitCode = err.exitCode;
  } else {
    process.stderr.write(
      `tally: unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exitCode = 1;
  }
}
