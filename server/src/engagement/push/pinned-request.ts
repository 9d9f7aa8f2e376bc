// One HTTP(S) request to addresses that were already checked: the agent's `lookup` answers with
// them instead of asking DNS again (all of them when Node tries several, as with IPv6 and IPv4), so nothing can change where the request goes between
// the check and the connection (no DNS-rebinding window). TLS still verifies the certificate for
// the URL's host name. Redirects are not followed and at most 64 KB of the answer is read.
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { CheckedEndpoint, ResolvedAddress } from './endpoint-guard.js';
import { type HttpAnswer, ProviderError, type ProviderKind } from './provider.js';

const TIMEOUT_MS = 10_000;
const MAX_BODY = 64 * 1024;

/** A lookup that always answers the checked addresses. */
export function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const [first] = addresses;
    if (!first) callback(Object.assign(new Error('no checked address'), { code: 'ENOTFOUND' }));
    else if (options?.all) callback(null, addresses);
    else callback(null, first.address, first.family);
  }) as LookupFunction;
}

export function pinnedRequest(
  provider: ProviderKind,
  target: CheckedEndpoint,
  init: { method: string; headers: Record<string, string>; body?: Uint8Array },
): Promise<HttpAnswer> {
  const secure = target.url.protocol === 'https:';
  const lookup = pinnedLookup(target.addresses);
  const agent = secure ? new https.Agent({ lookup, keepAlive: false }) : new http.Agent({ lookup, keepAlive: false });
  return new Promise<HttpAnswer>((resolve, reject) => {
    const fail = (why: string) =>
      reject(new ProviderError(provider, null, `The push service could not be reached: ${why}.`));
    const req = (secure ? https : http).request(
      target.url,
      { method: init.method, headers: init.headers, agent, timeout: TIMEOUT_MS },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size < MAX_BODY) chunks.push(chunk.subarray(0, MAX_BODY - size));
          size += chunk.length;
          if (size >= MAX_BODY) res.destroy();
        });
        const done = () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (typeof value === 'string') headers.set(name, value);
            else if (Array.isArray(value)) for (const v of value) headers.append(name, v);
          }
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers, text, json: null });
        };
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) =>
      fail(err.code === 'TIMEOUT' ? `no answer within ${TIMEOUT_MS / 1000} s` : (err.code ?? 'network error')),
    );
    req.end(init.body);
  }).finally(() => agent.destroy());
}
