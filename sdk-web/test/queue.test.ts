// @vitest-environment jsdom
// The SDK's persistent outbox: order, persistence, claiming, which answers are retried, backoff,
// and the sendBeacon hand-off when the page is hidden.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { backoff, MAX_ATTEMPTS, MAX_ITEMS, Queue } from '../src/queue.js';
import type { Reply } from '../src/transport.js';

type Sent = { url: string; body: unknown };

function queueWith(
  replies: (url: string, body: unknown) => Reply,
  extra: { beacon?: (u: string, b: unknown) => boolean } = {},
) {
  const sent: Sent[] = [];
  const queue = new Queue('test_queue', {
    send: async (url, body) => {
      sent.push({ url, body });
      return replies(url, body);
    },
    beacon: extra.beacon,
  });
  return { queue, sent };
}

const ok: Reply = { ok: true, status: 200, body: { success: true } };
const stored = () => JSON.parse(localStorage.getItem('test_queue') ?? '[]') as { u: string; n: number; t: number }[];

beforeEach(() => {
  localStorage.clear();
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('Queue', () => {
  it('sends calls in order and resolves each with its reply', async () => {
    const { queue, sent } = queueWith(() => ok);
    const a = queue.push('/a', { n: 1 });
    const b = queue.push('/b', { n: 2 });
    expect(await a).toEqual(ok);
    expect(await b).toEqual(ok);
    expect(sent.map((s) => s.url)).toEqual(['/a', '/b']);
    expect(stored()).toEqual([]);
  });

  it('persists calls before sending, so a new page sends what an old one left', async () => {
    const first = queueWith(() => ({ ok: false, status: 0 }));
    await first.queue.push('/left', { x: 1 });
    expect(stored()).toMatchObject([{ u: '/left', n: 1 }]);
    const second = queueWith(() => ok);
    vi.setSystemTime(1_000_000 + 60_000);
    await second.queue.flush();
    expect(second.sent).toEqual([{ url: '/left', body: { x: 1 } }]);
    expect(stored()).toEqual([]);
  });

  it('drops calls the server refuses for good (4xx) and keeps going', async () => {
    const { queue, sent } = queueWith((url) => (url === '/bad' ? { ok: false, status: 400 } : ok));
    const bad = queue.push('/bad', {});
    queue.push('/good', {});
    expect(await bad).toMatchObject({ status: 400 });
    await vi.waitFor(() => expect(sent.map((s) => s.url)).toEqual(['/bad', '/good']));
    expect(stored()).toEqual([]);
  });

  it('retries network failures, 5xx, 408 and 429 with growing delays until they succeed', async () => {
    const statuses = [0, 503, 429, 408];
    const { queue, sent } = queueWith(() => {
      const status = statuses.shift();
      return status === undefined ? ok : { ok: false, status };
    });
    expect(await queue.push('/r', {})).toBeNull();
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      const [item] = stored();
      expect(item).toMatchObject({ n: attempt });
      delays.push(item!.t - Date.now());
      await vi.advanceTimersByTimeAsync(item!.t - Date.now());
    }
    expect(sent).toHaveLength(5);
    expect(stored()).toEqual([]);
    expect(delays[1]!).toBeGreaterThan(delays[0]!);
    expect(delays[3]!).toBeGreaterThan(delays[2]!);
  });

  it('honours Retry-After', async () => {
    const { queue } = queueWith(() => ({ ok: false, status: 429, retryAfter: 30 }));
    await queue.push('/slow', {});
    expect(stored()[0]!.t - Date.now()).toBe(30_000);
  });

  it(`gives up after ${MAX_ATTEMPTS} attempts`, async () => {
    const { queue, sent } = queueWith(() => ({ ok: false, status: 0 }));
    await queue.push('/down', {});
    for (let i = 0; i < MAX_ATTEMPTS + 2; i++) await vi.advanceTimersByTimeAsync(120_000);
    expect(sent).toHaveLength(MAX_ATTEMPTS);
    expect(stored()).toEqual([]);
  });

  it('lets later calls through while one call keeps failing, and stops after two failures in a row', async () => {
    const { queue, sent } = queueWith((url) => (url.startsWith('/stuck') ? { ok: false, status: 0 } : ok));
    localStorage.setItem(
      'test_queue',
      JSON.stringify([
        { i: '1', u: '/stuck', b: {}, n: 0, t: 0 },
        { i: '2', u: '/fine', b: {}, n: 0, t: 0 },
        { i: '3', u: '/stuck-2', b: {}, n: 0, t: 0 },
        { i: '4', u: '/stuck-3', b: {}, n: 0, t: 0 },
        { i: '5', u: '/later', b: {}, n: 0, t: 0 },
      ]),
    );
    await queue.flush();
    expect(sent.map((s) => s.url)).toEqual(['/stuck', '/fine', '/stuck-2', '/stuck-3']);
    expect(
      stored()
        .map((x) => x.u)
        .sort(),
    ).toEqual(['/later', '/stuck', '/stuck-2', '/stuck-3']);
  });

  it('sends nothing while the browser is offline, and everything at once when it is back', async () => {
    const { queue, sent } = queueWith(() => ok);
    const online = vi.spyOn(navigator, 'onLine', 'get').mockReturnValue(false);
    queue.push('/offline', {});
    await vi.advanceTimersByTimeAsync(10);
    expect(sent).toEqual([]);
    expect(stored()).toHaveLength(1);
    online.mockReturnValue(true);
    queue.retryNow();
    await vi.waitFor(() => expect(sent).toHaveLength(1));
    online.mockRestore();
  });

  it('claims items before sending, so a second flush (another tab) never sends one twice', async () => {
    let release: (r: Reply) => void = () => {};
    const { queue, sent } = queueWith(() => ok);
    const slow = new Queue('test_queue', {
      send: (url, body) => {
        sent.push({ url, body });
        return new Promise((r) => {
          release = r;
        });
      },
    });
    localStorage.setItem('test_queue', JSON.stringify([{ i: '1', u: '/once', b: {}, n: 0, t: 0 }]));
    const pending = slow.flush();
    await queue.flush();
    release(ok);
    await pending;
    expect(sent.map((s) => s.url)).toEqual(['/once']);
  });

  it('hands what is left to sendBeacon when the page is hidden', async () => {
    const beaconed: Sent[] = [];
    const { queue } = queueWith(() => ({ ok: false, status: 0 }), {
      beacon: (url, body) => {
        beaconed.push({ url, body });
        return url !== '/too-big';
      },
    });
    localStorage.setItem(
      'test_queue',
      JSON.stringify([
        { i: '1', u: '/a', b: { a: 1 }, n: 1, t: Date.now() + 5000 },
        { i: '2', u: '/too-big', b: {}, n: 1, t: Date.now() + 5000 },
      ]),
    );
    queue.unload();
    expect(beaconed).toEqual([
      { url: '/a', body: { a: 1 } },
      { url: '/too-big', body: {} },
    ]);
    expect(stored().map((x) => x.u)).toEqual(['/too-big']);
  });

  it(`keeps at most ${MAX_ITEMS} calls, dropping the oldest`, async () => {
    const { queue } = queueWith(() => ({ ok: false, status: 0 }));
    vi.spyOn(navigator, 'onLine', 'get').mockReturnValue(false);
    for (let i = 0; i < MAX_ITEMS + 5; i++) queue.push(`/e${i}`, {});
    const items = stored();
    expect(items).toHaveLength(MAX_ITEMS);
    expect(items[0]!.u).toBe('/e5');
    vi.restoreAllMocks();
  });
});

describe('backoff', () => {
  it('doubles from one second, is capped at a minute, and is jittered by at most 20%', () => {
    expect(backoff(1, () => 0.5)).toBe(1000);
    expect(backoff(2, () => 0.5)).toBe(2000);
    expect(backoff(4, () => 0.5)).toBe(8000);
    expect(backoff(20, () => 0.5)).toBe(60_000);
    expect(backoff(1, () => 0)).toBe(800);
    expect(backoff(1, () => 1)).toBe(1200);
  });
});
