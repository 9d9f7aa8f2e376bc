// The embedded database's thread: one PGlite instance, spoken to in the PostgreSQL wire protocol
// over the worker's message port. The main thread's `pg` clients write protocol bytes; this thread
// cuts them into whole messages and runs them, and sends the backend's bytes back as they come.
// Keeping PGlite here means a long query never blocks the server's event loop, and a query that
// runs over its time can be stopped by terminating this thread (PGlite enforces no timeout).
// Plain JavaScript, so that it loads the same under tsx, vitest and compiled output.
// Durability (docs/durability.md): PGlite keeps synchronous_commit on, and its Node file system
// writes with fs.writeSync, so a commit's WAL is in the OS before the commit is acknowledged and
// survives a kill -9; it runs with fsync off (and its file system makes fsync a no-op), so an OS
// crash or power loss may lose recent commits. test/e2e/crash-durability.test.ts pins the first.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

const SSL_REQUEST = 80877103;
const CANCEL_REQUEST = 80877102;
const PROTOCOL_3 = 196608;

const db = await PGlite.create(workerData.dataDir ? { dataDir: workerData.dataDir } : {});

/** @type {Map<number, Buffer>} bytes of each connection not yet cut into whole messages */
const pending = new Map();
/** Protocol work runs strictly in order: PGlite has one session. */
let chain = Promise.resolve();

/** @param {Buffer} buf @returns {number} length of the first whole message, or 0 */
function firstMessageLength(buf) {
  if (buf.length >= 8) {
    const code = buf.readInt32BE(4);
    if (code === PROTOCOL_3 || code === SSL_REQUEST || code === CANCEL_REQUEST) {
      const len = buf.readInt32BE(0);
      return buf.length >= len ? len : 0;
    }
  }
  if (buf.length < 5) return 0;
  const len = 1 + buf.readInt32BE(1);
  return buf.length >= len ? len : 0;
}

/** @param {number} id @param {Uint8Array} bytes */
function send(id, bytes) {
  const copy = bytes.slice(); // a view into WASM memory must not be cloned whole
  parentPort.postMessage({ type: 'data', id, bytes: copy }, [copy.buffer]);
}

/** @param {number} id @param {Uint8Array} bytes */
function receive(id, bytes) {
  let buf = Buffer.concat([pending.get(id) ?? Buffer.alloc(0), Buffer.from(bytes)]);
  const whole = [];
  for (let len = firstMessageLength(buf); len > 0; len = firstMessageLength(buf)) {
    whole.push(buf.subarray(0, len));
    buf = buf.subarray(len);
  }
  pending.set(id, buf);
  for (const message of whole) {
    const code = message.length >= 8 ? message.readInt32BE(4) : 0;
    if (message.length === 8 && code === SSL_REQUEST) {
      send(id, Buffer.from('N'));
      continue;
    }
    if (message.length === 16 && code === CANCEL_REQUEST) continue; // nothing to cancel in one session
    const copy = new Uint8Array(message);
    chain = chain
      .then(() => db.execProtocolRawStream(copy, { onRawData: (data) => send(id, data) }))
      .catch((err) => parentPort.postMessage({ type: 'fatal', message: String(err?.message ?? err) }));
  }
}

/** A connection went away: leave the one session as a new connection expects to find it. */
function release(id) {
  pending.delete(id);
  chain = chain
    .then(async () => {
      if (db.isInTransaction()) await db.exec('ROLLBACK');
      await db.exec('RESET ALL');
    })
    .catch((err) => parentPort.postMessage({ type: 'fatal', message: String(err?.message ?? err) }));
}

parentPort.on('message', (msg) => {
  if (msg.type === 'data') receive(msg.id, msg.bytes);
  else if (msg.type === 'close') release(msg.id);
  else if (msg.type === 'shutdown') {
    chain = chain.then(async () => {
      await db.close();
      parentPort.postMessage({ type: 'closed' });
    });
  }
});
parentPort.postMessage({ type: 'ready' });
