// @vitest-environment jsdom
// Browser storage: localStorage when usable, memory when the page may not use it.
import { afterEach, describe, expect, it, vi } from 'vitest';

afterEach(() => {
  vi.restoreAllMocks();
  vi.resetModules();
});

describe('storage', () => {
  it('uses localStorage when it works', async () => {
    const { load, remove, save } = await import('../src/storage.js');
    save('k', 'v');
    expect(localStorage.getItem('k')).toBe('v');
    expect(load('k')).toBe('v');
    remove('k');
    expect(load('k')).toBeNull();
  });

  it('falls back to memory when localStorage throws (private modes, sandboxed frames)', async () => {
    vi.spyOn(window, 'localStorage', 'get').mockImplementation(() => {
      throw new DOMException('The operation is insecure.', 'SecurityError');
    });
    const { load, remove, save } = await import('../src/storage.js');
    expect(load('service_user_id')).toBeNull();
    save('service_user_id', 'abc');
    expect(load('service_user_id')).toBe('abc');
    remove('service_user_id');
    expect(load('service_user_id')).toBeNull();
  });
});
