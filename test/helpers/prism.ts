// An independent validator in front of a test server: Stoplight Prism (5.14.2, the last release
// for Node 20) as a validating proxy. With TEST_PRISM=1, helpers/server.ts starts one per test
// server and hands the tests Prism's address, so every request of the file goes through it; Prism
// checks each answer against the compiled document and logs what breaks it. Closing the server
// fails with those violations. Requests are not checked: tests send invalid ones on purpose.
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { CONTRACT_PATH } from '../../server/src/contract.js';

const PRISM = fileURLToPath(new URL('../../node_modules/@stoplight/prism-cli/dist/index.js', import.meta.url));

export const prismWanted = () => process.env.TEST_PRISM === '1';

export interface Prism {
  url: string;
  /** What Prism found wrong with the answers so far. */
  violations(): string[];
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
    probe.on('error', reject);
  });
}

/** Starts Prism in front of `upstream`; resolves once it listens. */
export async function startPrism(upstream: string): Promise<Prism> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.execPath,
    [
      PRISM,
      'proxy',
      CONTRACT_PATH,
      upstream,
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--cors',
      'false',
      '--errors',
      'false',
      '--validate-request',
      'false',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } },
  );
  const found: string[] = [];
  let output = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output += text;
      for (const line of text.split('\n')) {
        // e.g. "[VALIDATOR] ✖  error     Violation: response.body Request body must NOT have additional properties"
        if (/Violation: response/i.test(line)) found.push(line.replace(/^.*Violation: /, '').trim());
      }
      if (/Prism is listening/i.test(output)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`Prism exited (${code}) before listening:\n${output.slice(-2000)}`)));
  });
  await ready;
  return {
    url: `http://127.0.0.1:${port}`,
    violations: () => [...found],
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
