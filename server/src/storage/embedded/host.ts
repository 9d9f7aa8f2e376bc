// The main thread's side of the embedded database: starts the PGlite worker, gives `pg` clients a
// stream to it, and restarts it when it must be stopped (a sandbox query over its time cap) or
// when it dies. Committed transactions survive a restart: PGlite writes its WAL to the data
// directory at every commit, and reopening the directory replays it.
import { Duplex } from 'node:stream';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';

const WORKER = new URL('./worker.mjs', import.meta.url);

interface Message {
  type: 'ready' | 'data' | 'fatal' | 'closed';
  id?: number;
  bytes?: Uint8Array;
  message?: string;
}

export class TimeCapExceeded extends Error {
  constructor(readonly ms: number) {
    super(`embedded query stopped after ${ms} ms`);
  }
}

interface Running {
  worker: Worker;
  ready: Promise<void>;
  streams: Map<number, Duplex>;
}

export class EmbeddedHost {
  private current: Running | null = null;
  private closing = false;
  private nextId = 1;
  /** How many times the worker was started (1 after start). */
  generation = 0;

  constructor(
    /** Directory of the database files; undefined keeps the database in memory (lost on restart). */
    private readonly dataDir: string | undefined,
    private readonly logger?: Logger,
  ) {}

  start(): Promise<void> {
    this.generation++;
    const worker = new Worker(WORKER, { workerData: { dataDir: this.dataDir } });
    const streams = new Map<number, Duplex>();
    const running: Running = { worker, streams, ready: Promise.resolve() };
    running.ready = new Promise<void>((resolve, reject) => {
      worker.once('error', reject);
      worker.on('message', function first(m: Message) {
        if (m.type !== 'ready') return;
        worker.off('message', first);
        worker.off('error', reject);
        resolve();
      });
    });
    worker.on('message', (m: Message) => {
      if (m.type === 'data') streams.get(m.id!)?.push(Buffer.from(m.bytes!));
      else if (m.type === 'fatal') this.logger?.error({ err: m.message }, 'embedded database error');
    });
    worker.on('error', (err) => this.logger?.error({ err }, 'embedded database thread failed'));
    worker.once('exit', (code) => {
      for (const s of streams.values()) s.destroy(new Error('Connection terminated: the embedded database restarted'));
      streams.clear();
      if (this.current === running && !this.closing) {
        this.logger?.error({ code }, 'the embedded database stopped unexpectedly; restarting it');
        this.current = null;
        void this.start().catch((err) => this.logger?.error({ err }, 'the embedded database could not restart'));
      }
    });
    this.current = running;
    return running.ready;
  }

  /** Resolves when the worker can take connections (after a restart, the new one). */
  async ready(): Promise<void> {
    for (;;) {
      const running = this.current;
      if (!running) throw new Error('The embedded database is not running.');
      await running.ready;
      if (this.current === running) return;
    }
  }

  /** A duplex stream speaking the PostgreSQL protocol to the worker, for `new pg.Client({ stream })`. */
  openStream(): Duplex {
    const running = this.current;
    if (!running) throw new Error('The embedded database is not running.');
    const id = this.nextId++;
    let queued: Buffer[] = [];
    const flush = () => {
      if (queued.length === 0) return;
      const bytes = new Uint8Array(Buffer.concat(queued));
      queued = [];
      running.worker.postMessage({ type: 'data', id, bytes }, [bytes.buffer]);
    };
    const stream = new Duplex({
      read() {},
      write(chunk: Buffer, _encoding, callback) {
        // pg writes each protocol message on its own; send a query's messages together.
        if (queued.length === 0) queueMicrotask(flush);
        queued.push(chunk);
        callback();
      },
      final(callback) {
        flush();
        callback();
        // `pg` ends a connection (Terminate, then end) and waits for the stream to close: end the
        // readable side too, so that the stream closes now (knex's pool would wait 5 s for it).
        this.push(null);
      },
      destroy(err, callback) {
        running.streams.delete(id);
        running.worker.postMessage({ type: 'close', id });
        callback(err);
      },
    });
    running.streams.set(id, stream);
    Object.assign(stream, {
      connect: () => {
        running.ready.then(
          () => stream.emit('connect'),
          (err) => stream.destroy(err),
        );
      },
      setNoDelay: () => stream,
      setKeepAlive: () => stream,
    });
    return stream;
  }

  /**
   * Runs `fn`, stopping the worker if it has not finished after `ms` (PGlite cannot cancel a
   * query). The worker is then restarted and `fn`'s connection fails; this rejects with
   * TimeCapExceeded once the new worker is ready.
   */
  async withTimeCap<T>(ms: number, fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let stopped = null as Promise<void> | null;
    const work = fn();
    const cap = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        stopped = this.restart(`a query ran over its ${ms} ms cap`);
        stopped.then(
          () => reject(new TimeCapExceeded(ms)),
          () => reject(new TimeCapExceeded(ms)),
        );
      }, ms);
    });
    try {
      return await Promise.race([work, cap]);
    } catch (err) {
      if (stopped) {
        work.catch(() => undefined);
        await stopped.catch(() => undefined);
        throw new TimeCapExceeded(ms);
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops the worker at once and starts a new one on the same data directory. */
  async restart(reason: string): Promise<void> {
    const old = this.current;
    this.current = null;
    this.logger?.warn({ reason }, 'restarting the embedded database');
    if (!this.dataDir) this.logger?.error('the in-memory embedded database loses its data when it restarts');
    if (old) await old.worker.terminate();
    await this.start();
  }

  async close(): Promise<void> {
    this.closing = true;
    const running = this.current;
    this.current = null;
    if (!running) return;
    await running.ready.catch(() => undefined);
    const closed = new Promise<void>((resolve) => {
      running.worker.on('message', (m: Message) => m.type === 'closed' && resolve());
      running.worker.once('exit', () => resolve());
    });
    running.worker.postMessage({ type: 'shutdown' });
    await Promise.race([closed, new Promise((r) => setTimeout(r, 10_000))]);
    await running.worker.terminate();
  }
}
