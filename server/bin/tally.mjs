#!/usr/bin/env node
// Launcher of the `tally` command: runs the TypeScript sources through tsx (no build step).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
