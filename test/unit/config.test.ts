// The settings this module reads beyond the basics: TRUST_PROXY (Express's syntax),
// RATE_LIMITS_FAIL, the auth_failures rate-limit class, and PUSH_ENDPOINT_ALLOWLIST.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, SPEC_RATE_LIMITS } from '../../server/src/config.js';

const load = (env: Record<string, string>) => loadConfig({ NODE_ENV: 'test', ...env });

describe('TRUST_PROXY', () => {
  it('defaults to loopback and takes booleans, hop counts and lists of addresses, ranges and names', () => {
    expect(load({}).trustProxy).toBe('loopback');
    expect(load({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(load({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(load({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(load({ TRUST_PROXY: 'loopback, 10.0.0.0/8, fd00::/8, 192.0.2.7' }).trustProxy).toBe(
      'loopback, 10.0.0.0/8, fd00::/8, 192.0.2.7',
    );
  });

  it('refuses values Express would misread, naming them', () => {
    expect(() => load({ TRUST_PROXY: 'loopback, my-proxy' })).toThrow(ConfigError);
    expect(() => load({ TRUST_PROXY: '10.0.0.0/99' })).toThrow(/not understood: 10.0.0.0\/99/);
  });
});

describe('rate limits', () => {
  it('has 20 failed authentications per minute per IP in the spec limits, overridable and off with the rest', () => {
    expect(SPEC_RATE_LIMITS.auth_failures).toBe(20);
    expect(load({}).rateLimits?.auth_failures).toBe(20);
    expect(load({ RATE_LIMITS: '{"auth_failures":5}' }).rateLimits).toMatchObject({ auth_failures: 5, events: 1000 });
    expect(load({ RATE_LIMITS: 'off' }).rateLimits).toBeNull();
    expect(() => load({ RATE_LIMITS: '{"auth_failure":5}' })).toThrow(/auth_failures/);
  });

  it('fails open unless RATE_LIMITS_FAIL=closed', () => {
    expect(load({}).rateLimitsFail).toBe('open');
    expect(load({ RATE_LIMITS_FAIL: 'closed' }).rateLimitsFail).toBe('closed');
    expect(() => load({ RATE_LIMITS_FAIL: 'maybe' })).toThrow(ConfigError);
  });
});

describe('PUSH_ENDPOINT_ALLOWLIST', () => {
  it('is empty by default and splits host names from ranges (a bare address is one host)', () => {
    expect(load({}).pushEndpointAllowlist).toEqual({ hosts: [], ranges: [] });
    expect(
      load({ PUSH_ENDPOINT_ALLOWLIST: ' Push.Internal.example , 10.0.0.0/8,127.0.0.1, [::1], fd00::/8' })
        .pushEndpointAllowlist,
    ).toEqual({ hosts: ['push.internal.example'], ranges: ['10.0.0.0/8', '127.0.0.1/32', '::1/128', 'fd00::/8'] });
  });

  it('refuses entries that are neither, and short address forms that hide what they mean', () => {
    expect(() => load({ PUSH_ENDPOINT_ALLOWLIST: 'https://push.example/' })).toThrow(/not understood/);
    expect(() => load({ PUSH_ENDPOINT_ALLOWLIST: '127.1' })).toThrow(/not understood: 127.1/);
    expect(() => load({ PUSH_ENDPOINT_ALLOWLIST: '10.0.0.0/33' })).toThrow(ConfigError);
  });
});
