// Which part of server/src may import which (docs/development.md draws it), checked by
// `npm run check` (`npm run check:layers` runs dependency-cruiser with this file).
//
//   top        main.ts, cli.ts, server.ts, app.ts, tally.ts: start things and wire them together
//   adapters   http/, mcp/, cli/: turn requests into calls of the wings and their results back
//   wings      one folder per subject; each may import the ground and the wings listed under it
//   ground     config, logger, ids, errors, time, secrets, input-rules, contract, context, metrics and
//              storage/ (database handle, migrations, embedded worker, shared tables)
//
// Nothing may form an import cycle, type-only imports included. A wing's queries/ folder is its
// own: other wings call the wing's operations instead. Tests, scripts and benchmarks are not
// checked here (they may reach anything to test it).

/** Ground floor files (besides storage/). */
const GROUND_FILES = [
  'config',
  'logger',
  'ids',
  'errors',
  'error-codes\\.gen',
  'time',
  'secrets',
  'input-rules',
  'contract',
  'context',
  'metrics',
];
const SRC = '^server/src/';
const GROUND = [`${SRC}(${GROUND_FILES.join('|')})\\.ts$`, `${SRC}storage/`, `${SRC}types/`];
const TOP = `${SRC}(main|cli|server|app|tally)\\.ts$`;
const ADAPTERS = `${SRC}(http|mcp|cli)/`;

/**
 * Each wing and the wings it may import (besides the ground). The order is the building's floors,
 * lowest first: a wing only imports wings listed before it.
 */
const WINGS = {
  llm: [],
  sandbox: [],
  idempotency: [],
  language: ['llm'],
  admin: [],
  audiences: ['language', 'llm', 'sandbox'],
  analytics: ['admin', 'audiences', 'language', 'llm', 'sandbox'],
  privacy: ['audiences', 'idempotency'],
  tracking: ['admin'],
  engagement: ['admin', 'audiences', 'language', 'llm', 'privacy', 'sandbox'],
  website: ['admin', 'engagement', 'tracking'],
  jobs: ['engagement', 'idempotency', 'privacy'],
};
const wing = (name) => `${SRC}${name}/`;

module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      comment:
        'An import cycle in server/src. Break it by moving what both sides need (a type, an error, a helper) down a floor, into a file of its own.',
      severity: 'error',
      from: { path: SRC },
      to: { circular: true },
    },
    {
      name: 'ground-imports-ground',
      comment:
        'The ground floor (config, logger, ids, errors, time, secrets, input-rules, contract, storage/) imports only the ground floor; the composition root (tally.ts) hands it what the wings build.',
      severity: 'error',
      from: { path: GROUND, pathNot: `${SRC}context\\.ts$` },
      to: { path: SRC, pathNot: GROUND },
    },
    {
      name: 'context-types-only',
      comment:
        'context.ts describes what every operation receives: it may name the types of what the root builds, never import their code.',
      severity: 'error',
      from: { path: `${SRC}context\\.ts$` },
      to: { path: SRC, pathNot: GROUND, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'wings-stay-below-adapters',
      comment:
        'A wing never imports an adapter (http/, mcp/, cli/) or the top floor: they call the wings, not the other way.',
      severity: 'error',
      from: { path: `${SRC}(${Object.keys(WINGS).join('|')})/` },
      to: { path: [ADAPTERS, TOP] },
    },
    ...Object.entries(WINGS).map(([name, allowed]) => ({
      name: `wing-${name}`,
      comment: `The ${name}/ wing imports the ground floor${allowed.length ? ` and ${allowed.map((w) => `${w}/`).join(', ')}` : ''} only (the floors are drawn in docs/development.md).`,
      severity: 'error',
      from: { path: wing(name) },
      to: {
        path: `${SRC}(${Object.keys(WINGS).join('|')})/`,
        pathNot: [wing(name), ...allowed.map(wing)],
      },
    })),
    {
      name: 'queries-are-private',
      comment:
        "A wing's queries/ folder is its own: another wing calls that wing's operations and may name its row types (the adapters and the root may reach them too).",
      severity: 'error',
      from: { path: `${SRC}([^/]+)/`, pathNot: [ADAPTERS, TOP] },
      to: {
        path: [`${SRC}[^/]+/queries/`, `${SRC}[^/]+/[^/]+/queries/`],
        pathNot: `${SRC}$1/`,
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'mcp-does-not-import-http',
      comment:
        'mcp/ is an adapter of its own: it shares code with http/ through the wings or the ground, not through http/.',
      severity: 'error',
      from: { path: `${SRC}mcp/` },
      to: { path: `${SRC}http/` },
    },
    {
      name: 'cli-does-not-import-servers',
      comment: 'The CLI calls the wings directly; it does not import the HTTP or MCP adapters.',
      severity: 'error',
      from: { path: `${SRC}cli/` },
      to: { path: [`${SRC}http/`, `${SRC}mcp/`] },
    },
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/' },
    includeOnly: SRC,
  },
};
