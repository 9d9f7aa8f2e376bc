// hey-api generation from the committed OpenAPI document: the sources of @tally/client (src/gen)
// and the request and response types of the browser SDK (sdk-web/src/gen, website operations only).
import { defineConfig } from '@hey-api/openapi-ts';

// The contract's ErrorCode is open (any string, then the named codes), which TypeScript folds into
// plain `string`. The patch marks its open variant and the `string` resolver prints that variant as
// `string & {}`: `code` then reads `'NOT_FOUND' | ... | (string & {})`, so known codes autocomplete
// and narrow while codes added by a later server still type-check.
const OPEN_CODE = 'tally-open-error-code';

const parser = {
  patch: {
    schemas: {
      ErrorCode: (schema: object) => {
        for (const variant of (schema as { anyOf?: Array<Record<string, unknown>> }).anyOf ?? []) {
          if (variant.type === 'string' && !variant.enum) variant.format = OPEN_CODE;
        }
      },
    },
  },
};

const types = {
  name: '@hey-api/typescript',
  '~resolvers': {
    string: (ctx) => (ctx.schema.format === OPEN_CODE ? ctx.$.type.and('string', ctx.$.type.object()) : undefined),
  },
} as const;

export default defineConfig([
  {
    input: '../../generated/openapi/openapi.yaml',
    output: { path: 'src/gen', postProcess: [] },
    parser,
    plugins: [
      { name: '@hey-api/client-fetch', baseUrl: false, includeInEntry: true },
      types,
      {
        name: '@hey-api/sdk',
        operations: { strategy: 'single', containerName: 'TallySdk', methods: 'instance', nesting: 'operationId' },
      },
    ],
  },
  {
    input: '../../generated/openapi/openapi.yaml',
    output: { path: '../../sdk-web/src/gen', postProcess: [] },
    parser: { ...parser, filters: { operations: { include: ['/^[A-Z]+ \\/v1\\/website\\//'] } } },
    plugins: [types],
  },
]);
