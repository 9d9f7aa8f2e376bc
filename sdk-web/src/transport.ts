// Network calls: fetch with keepalive (it survives the page navigating away), and sendBeacon for
// what is still queued when the page is hidden. Never throws: a failure is status 0.
export interface Reply {
  ok: boolean;
  /** HTTP status; 0 when the network failed. */
  status: number;
  body?: unknown;
  /** Seconds from a Retry-After header, if any. */
  retryAfter?: number;
}

export async function send(url: string, body?: unknown): Promise<Reply> {
  try {
    const res = await fetch(
      url,
      body === undefined
        ? { credentials: 'omit' }
        : {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify(body),
            keepalive: true,
            credentials: 'omit',
          },
    );
    let parsed: unknown;
    try {
      parsed = await res.json();
    } catch {}
    const retryAfter = Number(res.headers.get('Retry-After')) || undefined;
    return { ok: res.ok, status: res.status, body: parsed, retryAfter };
  } catch {
    return { ok: false, status: 0 };
  }
}

export function beacon(url: string, body: unknown): boolean {
  try {
    return navigator.sendBeacon(url, new Blob([JSON.stringify(body)], { type: 'application/json' }));
  } catch {
    return false;
  }
}
