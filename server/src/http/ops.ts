// Operational endpoints outside the versioned API: liveness, readiness, metrics (http/metrics.ts),
// the contract itself and its rendered reference. Mounted before body parsing and contract validation.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type RequestHandler, Router } from 'express';
import { databaseReadiness } from '../admin/health.js';
import type { OpenApiDocument } from '../contract.js';
import { envelope } from '../errors.js';
import type { Database } from '../storage/db.js';

const DOCS_HTML = fileURLToPath(new URL('../../../generated/docs/index.html', import.meta.url));
/**
 * The reference page is one self-contained file (its scripts, styles and the contract inline).
 * The policy keeps it that way in the browser: nothing from another site, so it looks the same
 * offline and tells no third party who reads it (the renderer's "powered by" logo, which it would
 * fetch from a CDN, is simply not shown).
 */
const DOCS_CSP =
  "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function opsRouter(database: Database, yaml: string, doc: OpenApiDocument, metrics: RequestHandler): Router {
  const router = Router();
  router.get('/metrics', metrics);
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const status = await databaseReadiness(database);
    res.status(status === 'ready' ? 200 : 503).json({ status, database: database.kind });
  });
  router.get('/openapi.json', (_req, res) => {
    res.json(doc);
  });
  router.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml').send(yaml);
  });
  router.get('/docs', (_req, res) => {
    if (fs.existsSync(DOCS_HTML)) {
      res.setHeader('Content-Security-Policy', DOCS_CSP);
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.sendFile(DOCS_HTML);
    } else
      res
        .status(404)
        .json(envelope(404, 'NOT_FOUND', 'The API reference has not been generated: run npm run generate.'));
  });
  return router;
}
