// The served SDK bundle stays small: at most 8 KB gzipped (posthog-js-style size watch).
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { API_BASE_PLACEHOLDER, buildSdkBundle } from '../../server/src/http/sdk.js';

describe('the SDK bundle', () => {
  it('builds to one IIFE exposing ServiceWeb, at most 8 KB gzipped', async () => {
    const bundle = await buildSdkBundle();
    expect(bundle).toMatch(/^("use strict";)?var ServiceWeb=/);
    expect(bundle).toContain(API_BASE_PLACEHOLDER);
    for (const member of [
      'init',
      'sendUser',
      'registerForm',
      'trackEvent',
      'setUserId',
      'optOut',
      'optIn',
      'subscribePush',
    ]) {
      expect(bundle).toMatch(new RegExp(`\\b${member}:`));
    }
    // Private members are shortened everywhere; a leftover quoted name means they no longer match.
    expect(bundle).not.toMatch(/"_[a-z]\w*"/);
    const gzipped = gzipSync(bundle).length;
    console.log(`service-web.js: ${bundle.length} bytes, ${gzipped} bytes gzipped`);
    expect(gzipped).toBeLessThanOrEqual(8 * 1024);
  });
});
