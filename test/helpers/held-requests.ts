// Requests held in flight on purpose, for shutdown tests: a POST whose headers the server has read
// (it answered `100 Continue`, which Node sends just before handing the request to the app) and
// whose body is half sent, so the request is certainly being served when a signal arrives, and
// ends when the test sends the rest.
import http from 'node:http';
import net from 'node:net';

export interface Answer {
  status: number;
  /** The Connection header of the response. */
  connection: string | undefined;
  body: string;
}

export interface HeldRequest {
  /** Sends the rest of the body; resolves with the answer, rejects if the connection fails. */
  finish(): Promise<Answer>;
  /** Resolves with the answer or the error, whichever comes, without sending anything more. */
  outcome: Promise<Answer | Error>;
}

export function holdRequest(baseUrl: string, path: string, headers: Record<string, string>, body: string) {
  const url = new URL(baseUrl);
  const bytes = Buffer.from(body);
  const half = Math.floor(bytes.length / 2);
  // A keep-alive connection of its own, as browsers and SDKs use: the server decides whether it closes.
  const agent = new http.Agent({ keepAlive: true });
  return new Promise<HeldRequest>((resolve, reject) => {
    const req = http.request({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path,
      agent,
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': bytes.length,
        expect: '100-continue',
      },
    });
    const answered = new Promise<Answer>((done, fail) => {
      req.on('response', (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          data += d;
        });
        res.on('end', () => done({ status: res.statusCode ?? 0, connection: res.headers.connection, body: data }));
        res.on('error', fail);
      });
      req.on('error', fail);
    });
    void answered.then(
      () => agent.destroy(),
      () => agent.destroy(),
    );
    const outcome = answered.catch((err: Error) => err);
    req.once('error', reject); // before the server took the headers
    req.on('continue', () => {
      req.write(bytes.subarray(0, half));
      resolve({
        finish() {
          req.end(bytes.subarray(half));
          return answered;
        },
        outcome,
      });
    });
  });
}

/** Waits until a new TCP connection to `baseUrl` is refused (the server stopped listening). */
export async function untilRefused(baseUrl: string, ms = 30_000): Promise<boolean> {
  const url = new URL(baseUrl);
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = net.connect(Number(url.port), url.hostname);
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
    });
    if (refused) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}
