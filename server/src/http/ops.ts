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
    if (fs.existsSync(DOCS_HTML)) res.sendFile(DOCS_HTML);
    else
      res
        .status(404)
        .json(envelope(404, 'NOT_FOUND', 'The API reference has not been generated: run npm run generate.'));
  });
  return router;
}
