// The first held-out set of issue 34 (test/fixtures/nl-held-out.json, seed 1, UTC): see
// test/helpers/held-out.ts. Answered exactly or refused, never a confident wrong number.
import path from 'node:path';
import { heldOutSuite } from '../helpers/held-out.js';

heldOutSuite(path.resolve(import.meta.dirname, '../fixtures/nl-held-out.json'), {
  cases: 60,
  families: 10,
  refused: 3,
});
