// Fails when a hand-written file runs over 400 lines or a function over 80, so that every file
// can be read in one sitting and every function on one screen or two (docs/development.md).
//
//   node scripts/check-size.mjs [--root DIR]
//
// Files: every TypeScript, JavaScript and TypeSpec file under server/, sdk-web/, clients/, spec/,
// scripts/, bench/ and test/. Functions: the same files except the test suites (test/ and *.test.ts,
// whose describe() callbacks group tests rather than hold logic). Generated code is left out: any
// *.gen.ts file, a gen/ or generated/ folder, node_modules/ and dist/. The language engine
// (server/src/language/) is held to the same limits since issue 34 split its files.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const MAX_FILE_LINES = 400;
export const MAX_FUNCTION_LINES = 80;

const ROOTS = ['server', 'sdk-web', 'clients', 'spec', 'scripts', 'bench', 'test'];
const SOURCE = /\.(ts|mts|cts|js|mjs|cjs|tsp)$/;
const SKIP_DIR = new Set(['node_modules', 'dist', 'gen', 'generated']);

const args = process.argv.slice(2);
const root = path.resolve(
  args.includes('--root')
    ? args[args.indexOf('--root') + 1]
    : path.join(path.dirname(fileURLToPath(import.meta.url)), '..'),
);

/** Every checked file under `dir`, as a path relative to the root with forward slashes. */
function walk(dir, out) {
  if (!fs.existsSync(dir)) return out;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    const rel = path.relative(root, full).split(path.sep).join('/');
    if (entry.isDirectory()) {
      if (!SKIP_DIR.has(entry.name)) walk(full, out);
    } else if (SOURCE.test(entry.name) && !entry.name.includes('.gen.')) {
      out.push(rel);
    }
  }
  return out;
}

const isTestSuite = (rel) => rel.startsWith('test/') || /\/test\//.test(rel) || /\.test\.[cm]?[jt]s$/.test(rel);

/** A readable name for a function node: its own name, or what it is assigned to. */
function nameOf(node, sf) {
  if (node.name) return node.name.getText(sf);
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name) {
    return parent.name.getText(sf);
  }
  if (parent && ts.isCallExpression(parent)) return `callback of ${parent.expression.getText(sf).slice(0, 40)}(…)`;
  return 'anonymous function';
}

function longFunctions(rel, text) {
  const sf = ts.createSourceFile(rel, text, ts.ScriptTarget.Latest, true);
  const found = [];
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.end).line;
      const lines = last - first + 1;
      if (lines > MAX_FUNCTION_LINES) found.push({ line: first + 1, lines, name: nameOf(node, sf) });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

const files = ROOTS.flatMap((r) => walk(path.join(root, r), [])).sort();
if (files.length === 0) {
  console.error(`check-size: no source files under ${root}; is --root right?`);
  process.exit(2);
}

const problems = [];
for (const rel of files) {
  const text = fs.readFileSync(path.join(root, rel), 'utf8');
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > MAX_FILE_LINES) {
    problems.push(
      `${rel}:1  [file-size] ${lines} lines, more than ${MAX_FILE_LINES}: split it by subject into files of its folder.`,
    );
  }
  if (rel.endsWith('.tsp') || isTestSuite(rel)) continue;
  for (const f of longFunctions(rel, text)) {
    problems.push(
      `${rel}:${f.line}  [function-size] ${f.name} runs ${f.lines} lines, more than ${MAX_FUNCTION_LINES}: give its steps functions of their own.`,
    );
  }
}

if (problems.length > 0) {
  for (const p of problems) console.error(p);
  console.error(`\n${problems.length} file(s) or function(s) over the size limits (docs/development.md, "Size").`);
  process.exit(1);
}
console.log(`${files.length} files within ${MAX_FILE_LINES} lines, their functions within ${MAX_FUNCTION_LINES}.`);
