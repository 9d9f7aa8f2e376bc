// A small closed-loop HTTP load generator: `concurrency` workers each send one request at a time
// for `seconds`, after a warm-up. Loopback only; bounded in time.
import http from 'node:http';

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  perSecond: number;
}

export async function runLoad(options: {
  url: string;
  body: string;
  headers?: Record<string, string>;
  concurrency: number;
  seconds: number;
  warmupSeconds?: number;
}): Promise<LoadResult> {
  const target = new URL(options.url);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname)) throw new Error('load goes to loopback only');
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency });
  const headers = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(options.body)),
    ...options.headers,
  };
  const once = () =>
    new Promise<boolean>((resolve) => {
      const req = http.request(
        { hostname: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers, agent },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 200));
        },
      );
      req.on('error', () => resolve(false));
      req.end(options.body);
    });
  const phase = async (seconds: number) => {
    let requests = 0;
    let errors = 0;
    const end = Date.now() + seconds * 1000;
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: options.concurrency }, async () => {
        while (Date.now() < end) {
          if (await once()) requests++;
          else errors++;
        }
      }),
    );
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
    return { requests, errors, seconds: elapsed, perSecond: requests / elapsed };
  };
  await phase(options.warmupSeconds ?? 1);
  const result = await phase(options.seconds);
  agent.destroy();
  return result;
}
