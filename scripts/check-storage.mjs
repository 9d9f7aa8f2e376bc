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
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// Files whose queries are still being moved into storage/ by work in progress elsewhere. Each
// entry is a file, or a folder ending in '/'. Remove an entry when its work lands: the check
// fails while an entry has nothing left to exempt.
const EXEMPT = [];

const DRIVERS = /^(knex|pg|pg-(?!boss(?:\/|$))[a-z-]+|@types\/pg[a-z-]*|postgres|@electric-sql\/pglite[a-z-]*)(\/.*)?$/;
const DRIVER_PATH =
  /[\\/]node_modules[\\/](knex|pg|pg-(?!boss[\\/])[a-z-]+|@types[\\/]pg[a-z-]*|postgres|@electric-sql[\\/]pglite[a-z-]*)[\\/]/;
const HANDLE_NAMES = new Set(['db', 'trx', 'knex']);
const KNEX_METHODS = new Set([
  'raw',
  'whereRaw',
  'orWhereRaw',
  'andWhereRaw',
  'havingRaw',
  'orderByRaw',
  'groupByRaw',
  'joinRaw',
  'fromRaw',
  'onConflict',
  'whereIn',
  'whereNotIn',
  'whereNull',
  'whereNotNull',
  'forUpdate',
  'forShare',
  'returning',
]);

const TYPES =
  '(uuid|jsonb?|text|int[248]?|integer|bigint|numeric|timestamptz|timestamp|date|interval|boolean|bool|regclass|regnamespace|oid)';
const IDENT = '[a-z_"][\\w."]*';
const SQL_PATTERNS = [
  [
    'select … from',
    new RegExp(
      `\\bselect\\s+(distinct\\s+)?(\\*|\\d+\\b|${IDENT}\\s*(\\(|,|\\bas\\b|(?=\\s+from\\b)))[\\s\\S]*?\\bfrom\\s+[a-z_"(]`,
      'i',
    ),
  ],
  ['insert into', /\binsert\s+into\s+[a-z_"]/i],
  ['update … set', new RegExp(`\\bupdate\\s+${IDENT}\\s+(as\\s+)?([a-z_]\\w*\\s+)?set\\s+${IDENT}\\s*=`, 'i')],
  ['delete from', /\bdelete\s+from\s+[a-z_"]/i],
  [
    'with … as (',
    new RegExp(`\\bwith\\s+(recursive\\s+)?${IDENT}(\\s*\\([^)]*\\))?\\s+as\\s+(not\\s+)?(materialized\\s+)?\\(`, 'i'),
  ],
  [
    'DDL',
    /\b(create|alter|drop)\s+(or\s+replace\s+)?(unique\s+)?(table|index|schema|view|function|extension|policy|trigger|sequence|role)\s+[a-z_"]/i,
  ],
  ['truncate', /\btruncate\s+table\b/i],
  ['grant/revoke', /\b(grant|revoke)\s+(select|insert|update|delete|usage|execute|all)\b[\s\S]*?\bon\s+[a-z_"]/i],
  ['set', /\bset\s+(local|session)\s+[a-z_]|^\s*set\s+[a-z_.]+\s+=\s+\S/i],
  ['cast', new RegExp(`(\\?|\\$\\d+|'|\\)|\\b[a-z_]\\w*)::${TYPES}\\b`, 'i')],
  ['placeholder', /\b[a-z_][\w.]*\s*(=|<>|!=|<=|>=|<|>)\s*(\?|\$\d+)(?![\w?])|\bin\s*\(\s*(\?|\$\d+)/i],
  [
    'SQL function',
    /\b(date_trunc|to_char|jsonb_[a-z_]+|json_build_object|pg_[a-z_]+|to_regclass|current_database|array_agg|string_agg|generate_series|nextval)\s*\(/i,
  ],
  ['count(*)', /\bcount\(\s*(\*|distinct\s)/i],
  ['where', /\bwhere\s+[a-z_][\w.]*\s+(is\s+(not\s+)?null\b|in\s*\(|i?like\s|between\s)/i],
  ['on conflict', /\bon\s+conflict\b/i],
  ['returning', /\breturning\s+\*/i],
  ['order/group by', /\b(order|group)\s+by\s+(\d+\b|[a-z_][\w.]*\s+(asc|desc)\b)/i],
  ['join', /\b(left|inner|right|full|cross)\s+(outer\s+)?join\s+[a-z_"(]/i],
  ['union', /\bunion\s+(all\s+)?select\b/i],
  ['statement', /^\s*(begin|commit|rollback|analyze|vacuum|listen|notify)\b[\w\s.,]*;?\s*$/i],
];

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

/** Whether a type (or any member of a union or intersection) is declared by a database driver. */
function isDriverType(type, seen = new Set()) {
  if (!type || seen.has(type)) return false;
  seen.add(type);
  if (type.isUnionOrIntersection?.() && type.types.some((t) => isDriverType(t, seen))) return true;
  for (const symbol of [type.aliasSymbol, type.getSymbol?.()]) {
    for (const decl of symbol?.declarations ?? []) {
      if (DRIVER_PATH.test(decl.getSourceFile().fileName)) return true;
    }
  }
  return false;
}

/** The text of a string-like literal, or of a `+` chain of them, with `x` for each expression. */
function literalText(node) {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node)) {
    return node.head.text + node.templateSpans.map((s) => ` x ${s.literal.text}`).join('');
  }
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
    const left = literalText(node.left);
    const right = literalText(node.right);
    if (left === null && right === null) return null;
    return `${left ?? ' x '}${right ?? ' x '}`;
  }
  if (ts.isParenthesizedExpression(node)) return literalText(node.expression);
  return null;
}

function isModuleSpecifier(node) {
  const p = node.parent;
  if (!p) return false;
  return (
    ((ts.isImportDeclaration(p) || ts.isExportDeclaration(p)) && p.moduleSpecifier === node) ||
    ts.isExternalModuleReference(p) ||
    (ts.isLiteralTypeNode(p) && ts.isImportTypeNode(p.parent))
  );
}

function check({ root, exempt }) {
  const srcDir = path.join(root, 'server', 'src');
  const files = sourceFiles(srcDir);
  const problems = [];
  if (files.length === 0) {
    return { findings: [], problems: [`No TypeScript files under ${srcDir}: is --root the repository?`], checked: 0 };
  }
  const program = ts.createProgram(files, {
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
  const checker = program.getTypeChecker();
  const findings = [];
  const isExempt = (rel) => exempt.some((e) => (e.endsWith('/') ? rel.startsWith(e) : rel === e));
  let driverTypesInStorage = 0;
  let storageImportsDriver = false;
  let checked = 0;

  for (const file of files) {
    const rel = posix(path.relative(root, file));
    const sf = program.getSourceFile(file);
    if (!sf) continue;
    const inStorage = rel.startsWith('server/src/storage/') || /^server\/src\/(.+\/)?queries\//.test(rel);
    const exempted = !inStorage && isExempt(rel);
    if (!inStorage) checked++;
    const seen = new Set();
    const report = (node, rule, message) => {
      const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
      // One finding per line: the outermost expression, with the first rule that fired.
      if (seen.has(line)) return;
      seen.add(line);
      findings.push({ file: rel, line: line + 1, column: character + 1, rule, message, exempted });
    };
    const snippet = (node) => {
      const text = node.getText(sf).replace(/\s+/g, ' ');
      return text.length > 60 ? `${text.slice(0, 57)}…` : text;
    };
    const driverImport = (node, specifier) => {
      if (!DRIVERS.test(specifier)) return;
      if (inStorage) storageImportsDriver = true;
      else
        report(
          node,
          'driver-import',
          `imports the database driver '${specifier}'. Only server/src/storage/ may: pass the handle as \`Db\` (storage/handle.ts) and call storage functions.`,
        );
    };

    const visit = (node) => {
      // Module references.
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
        if (ts.isStringLiteral(node.moduleSpecifier)) driverImport(node, node.moduleSpecifier.text);
        // Handlers call services only: http/ may name storage types, never call storage.
        const typeOnly = ts.isImportDeclaration(node) ? node.importClause?.isTypeOnly : node.isTypeOnly;
        if (
          rel.startsWith('server/src/http/') &&
          ts.isStringLiteral(node.moduleSpecifier) &&
          /^\.\.\/(storage|.+\/queries)\//.test(node.moduleSpecifier.text) &&
          !typeOnly
        ) {
          report(
            node,
            'handler-storage',
            `imports '${node.moduleSpecifier.text}' into a handler: handlers call a wing's operations, which call its queries (a type-only import is fine).`,
          );
        }
      } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
        const e = node.moduleReference.expression;
        if (ts.isStringLiteral(e)) driverImport(node, e.text);
      } else if (ts.isImportTypeNode(node)) {
        const arg = node.argument;
        if (ts.isLiteralTypeNode(arg) && ts.isStringLiteral(arg.literal)) driverImport(node, arg.literal.text);
      } else if (ts.isModuleDeclaration(node) && ts.isStringLiteral(node.name)) {
        driverImport(node, node.name.text);
      } else if (
        ts.isCallExpression(node) &&
        (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
          (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
        node.arguments[0] &&
        ts.isStringLiteralLike(node.arguments[0])
      ) {
        driverImport(node, node.arguments[0].text);
      }

      // Uses of a driver-typed value (type checker).
      let target = null;
      if (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) target = node.expression;
      else if (ts.isCallExpression(node) || ts.isTaggedTemplateExpression(node)) {
        target = ts.isCallExpression(node) ? node.expression : node.tag;
      } else if (ts.isVariableDeclaration(node) && node.initializer && !ts.isIdentifier(node.name)) {
        target = node.initializer;
      }
      if (target && target.kind !== ts.SyntaxKind.ImportKeyword && target.kind !== ts.SyntaxKind.SuperKeyword) {
        let type;
        try {
          type = checker.getTypeAtLocation(target);
        } catch {
          type = undefined;
        }
        if (isDriverType(type)) {
          if (inStorage) driverTypesInStorage++;
          else
            report(
              node,
              'db-handle',
              `uses the database handle directly (\`${snippet(node)}\`). Put the query in a query function of its wing (server/src/<wing>/queries/); open transactions with inTransaction (storage/handle.ts).`,
            );
        }
      }

      if (!inStorage) {
        // Calls by name, for values whose types are lost.
        if (ts.isCallExpression(node)) {
          const callee = node.expression;
          const name = ts.isIdentifier(callee)
            ? callee.text
            : ts.isPropertyAccessExpression(callee)
              ? callee.name.text
              : null;
          const onString = ts.isPropertyAccessExpression(callee) && callee.expression.getText(sf) === 'String';
          if (name && HANDLE_NAMES.has(name)) {
            report(
              node,
              'db-call',
              `calls a database handle (\`${snippet(node)}\`). Queries belong in a wing's queries/ folder or server/src/storage/.`,
            );
          } else if (name && KNEX_METHODS.has(name) && ts.isPropertyAccessExpression(callee) && !onString) {
            report(
              node,
              'db-call',
              `calls knex's .${name}() (\`${snippet(node)}\`). Queries belong in a wing's queries/ folder or server/src/storage/.`,
            );
          }
        }
        // SQL text.
        const parentIsChain =
          node.parent &&
          (ts.isBinaryExpression(node.parent) || ts.isParenthesizedExpression(node.parent)) &&
          literalText(node.parent) !== null;
        if (!parentIsChain && !isModuleSpecifier(node)) {
          const text = literalText(node);
          if (text !== null) {
            const flat = text.replace(/\s+/g, ' ');
            for (const [name, pattern] of SQL_PATTERNS) {
              if (pattern.test(flat)) {
                const shown = flat.trim().length > 60 ? `${flat.trim().slice(0, 57)}…` : flat.trim();
                report(
                  node,
                  'sql-text',
                  `SQL text (${name}) in a string: "${shown}". SQL belongs in a wing's queries/ folder or server/src/storage/.`,
                );
                break;
              }
            }
          }
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }

  if (storageImportsDriver && driverTypesInStorage === 0) {
    problems.push(
      "Could not resolve the database drivers' types (knex, pg) in server/src/storage/, so uses of the handle cannot be found: run npm ci.",
    );
  }
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
  return { findings, problems, checked };
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
