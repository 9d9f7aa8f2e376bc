// `npm start`: runs the compiled server (server/dist/main.js). When the build is missing or older
// than the sources and the build tools are installed, it builds first; an install without them
// (npm prune --omit=dev) runs what it has and says so.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { buildStatus, distDir, root } from '../server/bin/build-state.mjs';

const status = buildStatus();
if (status !== 'fresh') {
  let canBuild = true;
  try {
    await import('esbuild');
  } catch {
    canBuild = false;
  }
  if (canBuild) {
    process.stderr.write(
      `The compiled server is ${status === 'missing' ? 'missing' : 'older than the sources'}: building it first.\n`,
    );
    execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { cwd: root, stdio: 'inherit' });
  } else if (status === 'missing') {
    process.stderr.write('Tally is not built and the build tools are not installed: run `npm ci && npm run build`.\n');
    process.exit(1);
  } else {
    process.stderr.write(
      'Warning: the compiled server is older than the sources here; run `npm run build` to update it.\n',
    );
  }
}
process.setSourceMapsEnabled(true);
await import(path.join(distDir, 'main.js'));
