// @vitest-environment jsdom
// subscribePush against a stubbed PushManager: subscribes with the app's VAPID key, posts the
// subscription, and resolves null (never rejects) when Web Push is not possible.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import * as ServiceWeb from '../src/index.js';
import { type Call, posts, stubFetch } from './helpers.js';

const API = 'https://tally.test';
// A real P-256 public key (65 bytes), base64url as `web-push generate-vapid-keys` prints it.
const VAPID = 'BEl62iUYgUivxIkv69yViEuiBIa-Ib9-SkvMeAtA3LFgDzkrxZJjSgSnfckjBJuBkr3qBUYIHBQFLXYp5Nksh8U';
const SUBSCRIPTION = {
  endpoint: 'https://push.example/send/abc',
  expirationTime: null,
  keys: { p256dh: 'BPk', auth: 'au' },
};
let calls: Call[];
let key: string | null;

function registration(
  subscribe = vi.fn(async (_options: PushSubscriptionOptionsInit) => ({ toJSON: () => SUBSCRIPTION })),
) {
  return {
    reg: {
      pushManager: { getSubscription: vi.fn(async () => null), subscribe },
    } as unknown as ServiceWorkerRegistration,
    subscribe,
  };
}

beforeEach(() => {
  key = VAPID;
  calls = stubFetch((url) =>
    url.includes('/config')
      ? { status: 200, body: { success: true, bot_detection: { enabled: true }, push: { webpush_public_key: key } } }
      : url.includes('/push-subscriptions')
        ? { status: 200, body: { success: true, subscription_id: 'sub-1' } }
        : { status: 200 },
  ).calls;
  ServiceWeb.init({ appId: 'app-1', apiBase: API, autoEvents: false });
});

describe('subscribePush', () => {
  it("subscribes with the app's public key and registers the subscription for the visitor", async () => {
    const { reg, subscribe } = registration();
    await expect(ServiceWeb.subscribePush(reg)).resolves.toBe('sub-1');
    const options = subscribe.mock.calls[0]![0] as { userVisibleOnly: boolean; applicationServerKey: Uint8Array };
    expect(options.userVisibleOnly).toBe(true);
    expect(options.applicationServerKey).toHaveLength(65);
    expect(options.applicationServerKey[0]).toBe(4); // an uncompressed P-256 point
    expect(posts(calls, '/v1/website/push-subscriptions')[0]).toMatchObject({
      url: `${API}/v1/website/push-subscriptions`,
      body: { app_id: 'app-1', visitor_id: localStorage.getItem('service_user_id'), subscription: SUBSCRIPTION },
    });
  });

  it('sends the user_hash given to setUserId, so a verified user can register its browser', async () => {
    ServiceWeb.setUserId('cust-1', { userHash: 'a'.repeat(64) });
    const { reg } = registration();
    await expect(ServiceWeb.subscribePush(reg)).resolves.toBe('sub-1');
    expect(posts(calls, '/v1/website/push-subscriptions').at(-1)!.body).toEqual({
      app_id: 'app-1',
      visitor_id: 'cust-1',
      subscription: SUBSCRIPTION,
      user_hash: 'a'.repeat(64),
    });
    // Another id without a hash forgets the old hash.
    ServiceWeb.setUserId('someone-else');
    await ServiceWeb.subscribePush(reg);
    expect(posts(calls, '/v1/website/push-subscriptions').at(-1)!.body).not.toHaveProperty('user_hash');
  });

  it("reuses the browser's existing subscription and finds the page's service worker itself", async () => {
    const { reg, subscribe } = registration();
    (reg.pushManager.getSubscription as ReturnType<typeof vi.fn>).mockResolvedValue({ toJSON: () => SUBSCRIPTION });
    Object.defineProperty(navigator, 'serviceWorker', {
      value: { getRegistration: async () => reg },
      configurable: true,
    });
    try {
      await expect(ServiceWeb.subscribePush()).resolves.toBe('sub-1');
      expect(subscribe).not.toHaveBeenCalled();
    } finally {
      Reflect.deleteProperty(navigator, 'serviceWorker');
    }
  });

  it('resolves null without subscribing when Web Push is not configured, or when the visitor refuses', async () => {
    key = null;
    ServiceWeb.init({});
    const { reg, subscribe } = registration();
    await expect(ServiceWeb.subscribePush(reg)).resolves.toBeNull();
    expect(subscribe).not.toHaveBeenCalled();

    key = VAPID;
    ServiceWeb.init({});
    const denied = registration(vi.fn().mockRejectedValue(new DOMException('Permission denied', 'NotAllowedError')));
    await expect(ServiceWeb.subscribePush(denied.reg)).resolves.toBeNull();
    expect(posts(calls, '/v1/website/push-subscriptions')).toEqual([]);
  });
});
