// hey-api generation of @tally/client from the committed OpenAPI document.
import { defineConfig } from '@hey-api/openapi-ts';

export default defineConfig({
  input: '../../generated/openapi/openapi.yaml',
  output: { path: 'src/gen', postProcess: [] },
  plugins: [
    { name: '@hey-api/client-fetch', baseUrl: false, includeInEntry: true },
    '@hey-api/typescript',
    {
      name: '@hey-api/sdk',
      operations: { strategy: 'single', containerName: 'TallySdk', methods: 'instance', nesting: 'operationId' },
    },
  ],
});
