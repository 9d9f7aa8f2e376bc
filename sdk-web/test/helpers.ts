// A fetch stub for SDK unit tests: records every call (URL and JSON body) and answers from a
// handler, 200 {success:true} by default.
import { vi } from 'vitest';

export interface Call {
  url: string;
  method: string;
  body: Record<string, unknown> | undefined;
}

export function stubFetch(
  answer: (url: string, body: unknown) => { status: number; body?: unknown } | Promise<never> = () => ({ status: 200 }),
) {
  const calls: Call[] = [];
  const fetchStub = vi.fn(async (url: string, init?: RequestInit) => {
    const body = init?.body ? JSON.parse(String(init.body)) : undefined;
    calls.push({ url, method: init?.method ?? 'GET', body });
    const reply = await answer(url, body);
    return new Response(JSON.stringify(reply.body ?? { success: true }), {
      status: reply.status,
      headers: { 'Content-Type': 'application/json' },
    });
  });
  vi.stubGlobal('fetch', fetchStub);
  return { calls, fetchStub };
}

export const posts = (calls: Call[], path: string) => calls.filter((c) => c.method === 'POST' && c.url.endsWith(path));
