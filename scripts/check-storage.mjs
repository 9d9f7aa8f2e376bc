// Fails when database access or SQL text appears in server/src outside the files fenced for it:
// server/src/storage/ (the database handle, migrations and the shared tables) and the queries/
// folder of each wing (server/src/<wing>/queries/, server/src/engagement/push/queries/), so that
// tenant scoping can be reviewed there (docs/development.md).
//
//   node scripts/check-storage.mjs [--root DIR] [--exempt PATH]... [--show-exempt]
//
// --show-exempt also lists what the exempt paths still hold (what is left to move).
//
// Rules, for every TypeScript file under server/src except storage/, queries/ folders and the exempt paths below
// (and handler-storage: files in server/src/http/ import nothing but types from storage/):
//   driver-import  an import (static, dynamic, `import type`, `import("…")` in a type, require,
//                  `declare module`) of a database driver: knex, pg and its companions, postgres,
//                  PGlite. Outside storage/, pass the handle as `Db` from storage/handle.ts.
//   db-handle      any use of a value whose type comes from knex or pg: a call (`ctx.db('users')`,
//                  `trx(...)`), a member (`.where`, `.raw`, `.transaction`, `.then` of a builder),
//                  destructuring. Found with the type checker, so aliases and helpers are caught.
//   db-call        by name, for code whose types are lost (`any`): calls of `db(`, `trx(`, `knex(`,
//                  `ctx.db(` and of knex-only methods (`.raw(`, `.whereRaw(`, `.onConflict(`, ...).
//   sql-text       SQL in a string or template literal (also `'…' + '…'` chains): statements
//                  (select … from, insert into, update … set, delete from, with … as (, DDL, grant),
//                  and fragments that only SQL has (`::jsonb` casts, `= ?` placeholders, `count(*)`,
//                  date_trunc(, jsonb_…(, pg_…(, on conflict, set local, group by 1, joins).
// A false positive in an ordinary message is fixed by rewording the message.
//
// It also fails when an exempt path no longer exists or has nothing left to exempt (shrink the
// list as the work lands), when it finds no source files (a wrong root), and when it cannot see
// knex's types in storage/ (missing node_modules would otherwise silence the db-handle rule).
//
// The rules themselves (patterns and the checks on each node) are in check-storage-rules.mjs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { checkNode } from './check-storage-rules.mjs';

// Files whose queries are still being moved into storage/ by work in progress elsewhere. Each
// entry is a file, or a folder ending in '/'. Remove an entry when its work lands: the check
// fails while an entry has nothing left to exempt.
const EXEMPT = [];

function parseArgs(argv) {
  const repo = fileURLToPath(new URL('..', import.meta.url));
  let root = repo;
  let exempt = null;
  let showExempt = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--root') root = path.resolve(argv[++i]);
    else if (argv[i] === '--show-exempt') showExempt = true;
    else if (argv[i] === '--exempt') {
      exempt ??= [];
      exempt.push(argv[++i]);
    } else throw new Error(`unknown argument ${argv[i]}`);
  }
  return { root, exempt: exempt ?? EXEMPT, showExempt };
}

function sourceFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') walk(full);
      } else if (/\.(ts|mts|cts|tsx)$/.test(entry.name)) out.push(full);
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return out.sort();
}

const posix = (p) => p.split(path.sep).join('/');

function createProgram(files) {
  return ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    esModuleInterop: true,
    resolveJsonModule: true,
    types: ['node'],
  });
}

function check({ root, exempt }) {
  const srcDir = path.join(root, 'server', 'src');
  const files = sourceFiles(srcDir);
  if (files.length === 0) {
    return { findings: [], problems: [`No TypeScript files under ${srcDir}: is --root the repository?`], checked: 0 };
  }
  const program = createProgram(files);
  const checker = program.getTypeChecker();
  const findings = [];
  const state = { driverTypesInStorage: 0, storageImportsDriver: false, checked: 0 };
  for (const file of files) checkFile(file, { root, exempt, program, checker, findings, state });

  const problems = [];
  if (state.storageImportsDriver && state.driverTypesInStorage === 0) {
    problems.push(
      "Could not resolve the database drivers' types (knex, pg) in server/src/storage/, so uses of the handle cannot be found: run npm ci.",
    );
  }
  problems.push(...staleExemptions(root, exempt, findings));
  return { findings, problems, checked: state.checked };
}

/** Walks one source file, adding what it finds to `findings` and what storage/ does to `state`. */
function checkFile(file, { root, exempt, program, checker, findings, state }) {
  const rel = posix(path.relative(root, file));
  const sf = program.getSourceFile(file);
  if (!sf) return;
  const inStorage = rel.startsWith('server/src/storage/') || /^server\/src\/(.+\/)?queries\//.test(rel);
  const exempted = !inStorage && exempt.some((e) => (e.endsWith('/') ? rel.startsWith(e) : rel === e));
  if (!inStorage) state.checked++;
  const seen = new Set();
  const report = (node, rule, message) => {
    const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
    // One finding per line: the outermost expression, with the first rule that fired.
    if (seen.has(line)) return;
    seen.add(line);
    findings.push({ file: rel, line: line + 1, column: character + 1, rule, message, exempted });
  };
  const context = { sf, rel, inStorage, checker, report, state };
  const visit = (node) => {
    checkNode(node, context);
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

/** Exempt paths that no longer exist or have nothing left to exempt. */
function staleExemptions(root, exempt, findings) {
  const problems = [];
  for (const entry of exempt) {
    const full = path.join(root, entry);
    if (!fs.existsSync(full)) {
      problems.push(
        `${entry} is in the exempt list but does not exist: remove it from EXEMPT in scripts/check-storage.mjs.`,
      );
    } else if (
      !findings.some((f) => f.exempted && (entry.endsWith('/') ? f.file.startsWith(entry) : f.file === entry))
    ) {
      problems.push(
        `${entry} is in the exempt list but has nothing left to exempt: remove it from EXEMPT in scripts/check-storage.mjs.`,
      );
    }
  }
  return problems;
}

const options = parseArgs(process.argv.slice(2));
const result = check(options);
const { problems, checked } = result;
result.findings.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column);
const line = (f) => `${f.file}:${f.line}:${f.column}  [${f.rule}] ${f.message}`;
if (options.showExempt) {
  for (const f of result.findings.filter((x) => x.exempted)) console.log(`(exempt) ${line(f)}`);
}
const findings = result.findings.filter((f) => !f.exempted);
for (const f of findings) console.error(line(f));
for (const p of problems) console.error(p);
if (findings.length > 0 || problems.length > 0) {
  if (findings.length > 0) {
    console.error(
      `\n${findings.length} place(s) outside server/src/storage/ and the queries/ folders use the database or hold SQL. Move each query into a query function of its wing, named for what it returns, taking the app id explicitly.`,
    );
  }
  process.exit(1);
}
console.log(
  `No database access or SQL outside server/src/storage/ and the wings' queries/ folders (${checked} files checked, ${options.exempt.length} paths exempt).`,
);
