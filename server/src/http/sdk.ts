// Serves the browser SDK at /sdk/v1/service-web.js (and /sdk/service-web.js). The compiled server
// (`npm run build`, `npm start`) serves the bundle the build wrote to sdk-web/dist/service-web.js;
// run from the TypeScript sources (`npm run dev`, the tests), it builds the bundle from sdk-web/src
// with esbuild on first request, so SDK changes show at once. The default apiBase is embedded:
// PUBLIC_BASE_URL, else the origin the script was requested from. That origin comes from the
// request's Host header, which any client can set, so such a copy is never stored by a cache
// (`Cache-Control: no-store`): set PUBLIC_BASE_URL to have the script cached.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Request, type Response, Router } from 'express';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { envelope } from '../errors.js';

const SDK_ENTRY = fileURLToPath(new URL('../../../sdk-web/src/index.ts', import.meta.url));
const SDK_DIST = fileURLToPath(new URL('../../../sdk-web/dist/service-web.js', import.meta.url));
/** The string literal in the SDK that the server replaces with the embedded apiBase. */
export const API_BASE_PLACEHOLDER = '__TALLY_API_BASE__';
const MAX_VARIANTS = 16;

/** Builds the minified IIFE bundle (global `ServiceWeb`) from the SDK sources. */
export async function buildSdkBundle(): Promise<string> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [SDK_ENTRY],
    bundle: true,
    minify: true,
    format: 'iife',
    globalName: 'ServiceWeb',
    target: ['es2020'],
    legalComments: 'none',
    mangleProps: /^_[a-z]/, // private members (posthog-js style): shorter names in the bundle
    write: false,
  });
  return result.outputFiles[0]!.text;
}

/** Whether this module runs compiled (server/dist) rather than from its TypeScript source. */
const COMPILED = import.meta.url.endsWith('.js');

async function loadBundle(): Promise<string> {
  if (COMPILED) return fs.promises.readFile(SDK_DIST, 'utf8');
  return buildSdkBundle();
}

function apiBase(config: Config, req: Request): string {
  if (config.publicBaseUrl) return config.publicBaseUrl.replace(/\/+$/, '');
  try {
    return new URL(`${req.protocol}://${req.get('host')}`).origin;
  } catch {
    return '';
  }
}

export function sdkRouter(config: Config, logger: Logger): Router {
  let bundle: Promise<string> | null = null;
  const variants = new Map<string, { body: string; etag: string }>();

  async function variant(base: string) {
    let v = variants.get(base);
    if (!v) {
      bundle ??= loadBundle().catch((err) => {
        bundle = null;
        throw err;
      });
      // An empty base leaves the placeholder, and the SDK then uses the script's own origin.
      const body = base
        ? (await bundle).split(API_BASE_PLACEHOLDER).join(JSON.stringify(base).slice(1, -1))
        : await bundle;
      v = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
      if (variants.size >= MAX_VARIANTS) variants.delete(variants.keys().next().value!);
      variants.set(base, v);
    }
    return v;
  }

  const serve = (maxAge: number) => async (req: Request, res: Response) => {
    let v: { body: string; etag: string };
    try {
      v = await variant(apiBase(config, req));
    } catch (err) {
      logger.error({ err: (err as Error).message }, 'could not load the browser SDK');
      res
        .status(500)
        .json(
          envelope(
            500,
            'INTERNAL_ERROR',
            'The browser SDK is not available on this server (its operator can run npm run build).',
          ),
        );
      return;
    }
    // Without PUBLIC_BASE_URL the embedded address came from this request's Host header: a shared
    // cache must not hand one client's Host to everyone else.
    res.setHeader('Cache-Control', config.publicBaseUrl ? `public, max-age=${maxAge}` : 'no-store');
    res.setHeader('ETag', v.etag);
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.vary('Host');
    if (req.header('if-none-match') === v.etag) {
      res.status(304).end();
      return;
    }
    res.type('application/javascript; charset=utf-8').send(v.body);
  };

  const router = Router();
  // A CDN pulling from this server under a path (CDN_URL=https://cdn.example.com/tally) finds the
  // script under that path too.
  const cdnPath = config.cdnUrl ? new URL(config.cdnUrl).pathname.replace(/\/+$/, '') : '';
  for (const prefix of new Set(['', cdnPath])) {
    router.get(`${prefix}/sdk/v1/service-web.js`, serve(3600));
    router.get(`${prefix}/sdk/service-web.js`, serve(300));
  }
  return router;
}
