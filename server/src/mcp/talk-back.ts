// Requests Tally sends to an MCP client while one of its calls runs (today: elicitation, the
// person's confirmation before a push campaign), and the way the client's answer gets back to them.
//
// The request goes out on the SSE stream of the client's POST, and the client answers with a new
// POST, which a load balancer may hand to any instance. So each instance keeps the requests it is
// waiting on in a registry keyed by session and JSON-RPC id, and the ids carry the instance that
// holds them (`<instance>:<n>`, unique in the process, so two calls of one session never share
// one). An answer that reaches the instance holding its request completes it at once; one that
// reaches another instance is relayed over Redis pub/sub when REDIS_URL is set. Without Redis the
// answer is lost and the request times out, which callers treat as no answer (nothing is created).
import { randomBytes } from 'node:crypto';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';

const CHANNEL = 'tally:mcp:answers';

/** A client's answer to a request the server sent: a JSON-RPC response (result or error). */
export type ClientAnswer = JSONRPCMessage & { id: string | number };

type Deliver = (answer: ClientAnswer) => void;

export function isClientAnswer(message: unknown): message is ClientAnswer {
  if (!message || typeof message !== 'object' || Array.isArray(message)) return false;
  const m = message as Record<string, unknown>;
  return m.jsonrpc === '2.0' && m.method === undefined && ('result' in m || 'error' in m) && m.id !== undefined;
}

export class McpTalkBack {
  /** This process, as named in the ids of the requests it sends. */
  readonly instance = randomBytes(6).toString('hex');
  private next = 1;
  private readonly waiting = new Map<string, Deliver>();
  private publisher: Redis | null = null;
  private subscriber: Redis | null = null;

  constructor(
    redisUrl: string | undefined,
    private readonly logger: Logger,
  ) {
    if (!redisUrl) return;
    const options = { maxRetriesPerRequest: 1, connectTimeout: 1000, lazyConnect: false };
    this.publisher = new Redis(redisUrl, options);
    this.subscriber = new Redis(redisUrl, options);
    for (const client of [this.publisher, this.subscriber]) {
      client.on('error', (err) => this.logger.warn({ err: err.message }, 'MCP answer relay: Redis error'));
    }
    this.subscriber.subscribe(CHANNEL).catch((err) => {
      this.logger.warn({ err: (err as Error).message }, 'MCP answer relay: could not subscribe');
    });
    this.subscriber.on('message', (_channel, payload) => this.relayed(payload));
  }

  /** Whether answers reaching another instance are relayed to this one (Redis configured). */
  get relays(): boolean {
    return this.publisher !== null;
  }

  /** A new id for a request sent in `sessionId`, naming this instance. */
  newRequestId(): string {
    return `${this.instance}:${this.next++}`;
  }

  /** Waits for the client's answer to `id` in `sessionId`; returns the function that stops waiting. */
  expect(sessionId: string, id: string, deliver: Deliver): () => void {
    const key = `${sessionId} ${id}`;
    this.waiting.set(key, deliver);
    return () => {
      if (this.waiting.get(key) === deliver) this.waiting.delete(key);
    };
  }

  /**
   * Hands a client's answer to the request it answers: here when this instance holds it, else
   * through Redis to the instance named in its id. Returns false when it can go nowhere.
   */
  async answer(sessionId: string, answer: ClientAnswer): Promise<boolean> {
    if (this.take(sessionId, answer)) return true;
    const holder = String(answer.id).split(':')[0];
    if (!this.publisher || !holder || holder === this.instance) return false;
    try {
      await this.publisher.publish(CHANNEL, JSON.stringify({ holder, sessionId, answer }));
      return true;
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'MCP answer relay: could not publish');
      return false;
    }
  }

  private take(sessionId: string, answer: ClientAnswer): boolean {
    const key = `${sessionId} ${String(answer.id)}`;
    const deliver = this.waiting.get(key);
    if (!deliver) return false;
    this.waiting.delete(key);
    deliver(answer);
    return true;
  }

  private relayed(payload: string): void {
    let parsed: { holder?: unknown; sessionId?: unknown; answer?: unknown };
    try {
      parsed = JSON.parse(payload);
    } catch {
      return;
    }
    if (parsed.holder !== this.instance || typeof parsed.sessionId !== 'string') return;
    if (!isClientAnswer(parsed.answer)) return;
    this.take(parsed.sessionId, parsed.answer);
  }

  async close(): Promise<void> {
    this.waiting.clear();
    for (const client of [this.subscriber, this.publisher]) {
      if (!client) continue;
      await client.quit().catch(() => client.disconnect());
    }
    this.publisher = null;
    this.subscriber = null;
  }
}
