// The rules of the storage check (scripts/check-storage.mjs, whose header describes them): the
// patterns for database drivers, knex calls and SQL text, and the checks run on each node of a
// source file, in the order they report (one finding per line: the first rule that fires).
import ts from 'typescript';

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

/** A node's text on one line, shortened for a message. */
function snippet(node, sf) {
  const text = node.getText(sf).replace(/\s+/g, ' ');
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

/**
 * Checks one node of a source file. `file` holds the file (`sf`, its path `rel`, `inStorage`), the
 * type `checker`, `report(node, rule, message)`, and `state`, where what storage/ does is counted.
 */
export function checkNode(node, file) {
  moduleReference(node, file);
  driverTypedUse(node, file);
  if (!file.inStorage) {
    callByName(node, file);
    sqlText(node, file);
  }
}

/** driver-import: a module reference of any kind that names a database driver. */
function driverImport(node, specifier, file) {
  if (!DRIVERS.test(specifier)) return;
  if (file.inStorage) file.state.storageImportsDriver = true;
  else
    file.report(
      node,
      'driver-import',
      `imports the database driver '${specifier}'. Only server/src/storage/ may: pass the handle as \`Db\` (storage/handle.ts) and call storage functions.`,
    );
}

/** Module references: imports, exports, `import x = require()`, `import()` types and calls, `declare module`. */
function moduleReference(node, file) {
  if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
    if (ts.isStringLiteral(node.moduleSpecifier)) driverImport(node, node.moduleSpecifier.text, file);
    handlerImport(node, file);
  } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
    const e = node.moduleReference.expression;
    if (ts.isStringLiteral(e)) driverImport(node, e.text, file);
  } else if (ts.isImportTypeNode(node)) {
    const arg = node.argument;
    if (ts.isLiteralTypeNode(arg) && ts.isStringLiteral(arg.literal)) driverImport(node, arg.literal.text, file);
  } else if (ts.isModuleDeclaration(node) && ts.isStringLiteral(node.name)) {
    driverImport(node, node.name.text, file);
  } else if (
    ts.isCallExpression(node) &&
    (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
      (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
    node.arguments[0] &&
    ts.isStringLiteralLike(node.arguments[0])
  ) {
    driverImport(node, node.arguments[0].text, file);
  }
}

/** handler-storage: handlers call services only: http/ may name storage types, never call storage. */
function handlerImport(node, file) {
  const typeOnly = ts.isImportDeclaration(node) ? node.importClause?.isTypeOnly : node.isTypeOnly;
  if (
    file.rel.startsWith('server/src/http/') &&
    ts.isStringLiteral(node.moduleSpecifier) &&
    /^\.\.\/(storage|.+\/queries)\//.test(node.moduleSpecifier.text) &&
    !typeOnly
  ) {
    file.report(
      node,
      'handler-storage',
      `imports '${node.moduleSpecifier.text}' into a handler: handlers call a wing's operations, which call its queries (a type-only import is fine).`,
    );
  }
}

/** db-handle: a use of a value whose type comes from a driver (found with the type checker). */
function driverTypedUse(node, file) {
  let target = null;
  if (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) target = node.expression;
  else if (ts.isCallExpression(node) || ts.isTaggedTemplateExpression(node)) {
    target = ts.isCallExpression(node) ? node.expression : node.tag;
  } else if (ts.isVariableDeclaration(node) && node.initializer && !ts.isIdentifier(node.name)) {
    target = node.initializer;
  }
  if (!target || target.kind === ts.SyntaxKind.ImportKeyword || target.kind === ts.SyntaxKind.SuperKeyword) return;
  let type;
  try {
    type = file.checker.getTypeAtLocation(target);
  } catch {
    type = undefined;
  }
  if (!isDriverType(type)) return;
  if (file.inStorage) file.state.driverTypesInStorage++;
  else
    file.report(
      node,
      'db-handle',
      `uses the database handle directly (\`${snippet(node, file.sf)}\`). Put the query in a query function of its wing (server/src/<wing>/queries/); open transactions with inTransaction (storage/handle.ts).`,
    );
}

/** db-call: calls by name, for values whose types are lost. */
function callByName(node, file) {
  if (!ts.isCallExpression(node)) return;
  const callee = node.expression;
  const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : null;
  const onString = ts.isPropertyAccessExpression(callee) && callee.expression.getText(file.sf) === 'String';
  if (name && HANDLE_NAMES.has(name)) {
    file.report(
      node,
      'db-call',
      `calls a database handle (\`${snippet(node, file.sf)}\`). Queries belong in a wing's queries/ folder or server/src/storage/.`,
    );
  } else if (name && KNEX_METHODS.has(name) && ts.isPropertyAccessExpression(callee) && !onString) {
    file.report(
      node,
      'db-call',
      `calls knex's .${name}() (\`${snippet(node, file.sf)}\`). Queries belong in a wing's queries/ folder or server/src/storage/.`,
    );
  }
}

/** sql-text: SQL in a string, a template or a `+` chain of them (checked once, at the whole chain). */
function sqlText(node, file) {
  const parentIsChain =
    node.parent &&
    (ts.isBinaryExpression(node.parent) || ts.isParenthesizedExpression(node.parent)) &&
    literalText(node.parent) !== null;
  if (parentIsChain || isModuleSpecifier(node)) return;
  const text = literalText(node);
  if (text === null) return;
  const flat = text.replace(/\s+/g, ' ');
  for (const [name, pattern] of SQL_PATTERNS) {
    if (pattern.test(flat)) {
      const shown = flat.trim().length > 60 ? `${flat.trim().slice(0, 57)}…` : flat.trim();
      file.report(
        node,
        'sql-text',
        `SQL text (${name}) in a string: "${shown}". SQL belongs in a wing's queries/ folder or server/src/storage/.`,
      );
      break;
    }
  }
}
