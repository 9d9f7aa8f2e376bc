// The pages a person finds at the server's root: `/`, a small page that says what this server is
// and points to its reference, its contract and its guides; `/guides/<name>`, the guides in
// `docs/` as plain text. Nothing here loads anything from another site.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Request, type Response, Router } from 'express';
import { envelope } from '../errors.js';

const GUIDES_DIR = fileURLToPath(new URL('../../../docs/', import.meta.url));
/** Pages of Tally's own, with no outside resources and no scripts. */
export const SELF_ONLY_CSP =
  "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const GUIDE_TITLES: Record<string, string> = {
  'analytics.md': 'Analytics: metrics, questions in words, SQL',
  'segments.md': 'Audiences and their criteria',
  'push.md': 'Push notifications and providers',
  'campaigns.md': 'Push campaigns',
  'website.md': 'Websites and the browser SDK',
  'mcp.md': 'AI clients (MCP)',
  'privacy.md': 'Privacy: erasure, export, retention',
  'security.md': 'Security',
  'cli.md': 'The tally command',
  'operations.md': 'Running Tally in production',
  'metrics.md': 'Metrics and alerts',
  'durability.md': 'Shutdown and crash safety',
  'rotation.md': 'Rotating keys and secrets',
  'development.md': 'Developing Tally',
};

/** The guides present in docs/, in the order above, then any others. */
function guides(): string[] {
  let files: string[];
  try {
    files = fs.readdirSync(GUIDES_DIR).filter((f) => /^[a-z0-9-]+\.md$/.test(f));
  } catch {
    return [];
  }
  const order = Object.keys(GUIDE_TITLES);
  const rank = (f: string) => (order.includes(f) ? order.indexOf(f) : order.length);
  return files.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function homePage(): string {
  const guideItems = guides()
    .map((f) => `<li><a href="/guides/${f}">${escapeHtml(GUIDE_TITLES[f] ?? f)}</a></li>`)
    .join('\n      ');
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Tally</title>
    <style>
      body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; color: #1d2430; }
      h1 { margin-bottom: 0.25rem; } p.lead { margin-top: 0; color: #4a5565; } code { background: #f1f3f6; padding: 0 0.25rem; }
    </style>
  </head>
  <body>
    <h1>Tally</h1>
    <p class="lead">This server collects events, builds audiences, answers analytics questions and sends push notifications.</p>
    <h2>Reference</h2>
    <ul>
      <li><a href="/docs">API reference</a>: every operation, its parameters, answers and errors</li>
      <li><a href="/openapi.json">/openapi.json</a> and <a href="/openapi.yaml">/openapi.yaml</a>: the contract (OpenAPI 3.1), for code generators and API tools</li>
      <li><a href="/sdk/v1/service-web.js">/sdk/v1/service-web.js</a>: the browser SDK</li>
      <li><code>/mcp</code>: the endpoint for AI clients (Model Context Protocol)</li>
    </ul>
    <h2>Guides</h2>
    <ul>
      ${guideItems || '<li>The guides are not installed on this server.</li>'}
    </ul>
  </body>
</html>
`;
}

function wantsJson(req: Request): boolean {
  const best = req.accepts(['html', 'json']);
  return best === 'json';
}

export function homeRouter(): Router {
  const router = Router();
  router.get('/', (req: Request, res: Response) => {
    if (wantsJson(req)) {
      res.json({
        name: 'Tally',
        reference: '/docs',
        contract: { json: '/openapi.json', yaml: '/openapi.yaml' },
        guides: guides().map((f) => `/guides/${f}`),
        sdk: '/sdk/v1/service-web.js',
        mcp: '/mcp',
      });
      return;
    }
    res.setHeader('Content-Security-Policy', SELF_ONLY_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.type('html').send(homePage());
  });
  router.get('/guides/:name', (req: Request, res: Response) => {
    const name = String(req.params.name);
    if (!guides().includes(name)) {
      res.status(404).json(envelope(404, 'NOT_FOUND', `No guide ${name}; the list is at /.`));
      return;
    }
    res.setHeader('Content-Security-Policy', SELF_ONLY_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.type('text/plain; charset=utf-8').send(fs.readFileSync(path.join(GUIDES_DIR, name), 'utf8'));
  });
  return router;
}
