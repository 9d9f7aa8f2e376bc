// The second held-out set of issue 34 (test/fixtures/nl-held-out-2.json): written after the first
// had been seen, before the engine changes of that session, on other demo data (seed 5, 80 users,
// an organization in America/New_York). See test/helpers/held-out.ts.
import path from 'node:path';
import { heldOutSuite } from '../helpers/held-out.js';

heldOutSuite(path.resolve(import.meta.dirname, '../fixtures/nl-held-out-2.json'), {
  cases: 60,
  families: 10,
  refused: 5,
});
