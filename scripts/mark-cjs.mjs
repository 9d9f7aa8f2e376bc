// Marks a CommonJS build folder with its own package.json, so Node reads its .js files as
// CommonJS inside a package whose "type" is "module".
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
if (!dir) throw new Error('usage: mark-cjs.mjs <dir>');
fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
