// Rebuilds everything generated from spec/: the OpenAPI documents, the rendered reference,
// the @tally/client sources and its run-time tables, the browser SDK's contract types, the
// server's typed operation list and its table of error codes.
// Generated files are committed; `npm run check` verifies they are current.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = (cmd, args, cwd = root) => execFileSync(cmd, args, { cwd, stdio: 'inherit' });

run(process.execPath, ['scripts/compile-spec.mjs']);
run(
  process.execPath,
  [`${root}node_modules/@hey-api/openapi-ts/bin/run.js`, '--file', 'openapi-ts.config.ts'],
  `${root}clients/node`,
);
run(process.execPath, ['scripts/generate-operations.mjs']);
run(process.execPath, ['scripts/generate-error-codes.mjs']);
run(process.execPath, ['scripts/generate-client-tables.mjs']);
run(process.execPath, [
  `${root}node_modules/@biomejs/biome/bin/biome`,
  'format',
  '--write',
  'server/src/http/operations.gen.ts',
  'server/src/error-codes.gen.ts',
  'clients/node/src/contract.gen.ts',
]);
