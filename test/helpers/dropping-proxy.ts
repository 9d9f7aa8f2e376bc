// A local HTTP proxy that loses answers: it forwards every request to the target, and for the
// first `drop` requests it reads the target's whole answer and then closes the client's socket
// without sending it, as a network failure after the server has done the work would. The client
// sees a failed request; the server saw a complete one.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface DroppingProxy {
  url: string;
  /** Requests forwarded, in order: method, path and the status the target answered. */
  forwarded: { method: string; path: string; status: number; dropped: boolean }[];
  close(): Promise<void>;
}

export async function startDroppingProxy(target: string, drop = 1): Promise<DroppingProxy> {
  const forwarded: DroppingProxy['forwarded'] = [];
  const to = new URL(target);
  const server = http.createServer((req, res) => {
    const upstream = http.request(
      {
        host: to.hostname,
        port: to.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: to.host },
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', () => {
          const dropped = forwarded.length < drop;
          forwarded.push({ method: req.method!, path: req.url!, status: answer.statusCode!, dropped });
          if (dropped) {
            req.socket.destroy();
            return;
          }
          res.writeHead(answer.statusCode!, answer.headers);
          res.end(Buffer.concat(chunks));
        });
      },
    );
    upstream.on('error', () => req.socket.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forwarded,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
