import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'server/src/**/*.test.ts', 'sdk-web/test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    env: { NODE_ENV: 'test', RATE_LIMITS: 'off' },
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
