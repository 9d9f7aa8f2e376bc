// Fails when regenerating from spec/ changes any committed generated file.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const paths = [
  'generated',
  'clients/node/src/gen',
  'clients/node/src/contract.gen.ts',
  'sdk-web/src/gen',
  'server/src/http/operations.gen.ts',
  'server/src/error-codes.gen.ts',
];
const status = () => execFileSync('git', ['status', '--porcelain', '--', ...paths], { cwd: root, encoding: 'utf8' });
const diff = () => execFileSync('git', ['diff', '--', ...paths], { cwd: root, encoding: 'utf8' });

const before = status() + diff();
execFileSync(process.execPath, ['scripts/generate.mjs'], { cwd: root, stdio: 'inherit' });
const after = status() + diff();
if (before !== after || after.trim() !== '') {
  console.error('\nGenerated files are not current: run `npm run generate` and commit the result.\n');
  console.error(status());
  process.exit(1);
}
console.log('Generated files are current.');
