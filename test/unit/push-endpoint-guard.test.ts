// The rules for Web Push subscription endpoints (they come from browsers): https only, and a host
// that resolves only to public unicast addresses, unless PUSH_ENDPOINT_ALLOWLIST exempts it. The
// resolver is a stub here, so names resolve to whatever each case needs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PushEndpointAllowlist } from '../../server/src/config.js';
import {
  addressRefusal,
  EndpointRefusedError,
  type HostResolver,
  resolvePushEndpoint,
} from '../../server/src/engagement/push/endpoint-guard.js';
import { pinnedRequest } from '../../server/src/engagement/push/pinned-request.js';

const NONE: PushEndpointAllowlist = { hosts: [], ranges: [] };

/** A resolver answering from a table, counting its calls. */
function stub(table: Record<string, string[]>) {
  const calls: string[] = [];
  const resolver: HostResolver = async (host) => {
    calls.push(host);
    const found = table[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolver, calls };
}

async function refusal(url: string, resolver: HostResolver, allowlist = NONE): Promise<string> {
  try {
    await resolvePushEndpoint(url, allowlist, resolver);
  } catch (err) {
    if (err instanceof EndpointRefusedError) return err.reason;
    throw err;
  }
  return 'accepted';
}

describe('addresses', () => {
  it('accepts public unicast addresses only', () => {
    for (const ok of ['142.250.74.110', '2a00:1450:4007:80c::200a', '::ffff:142.250.74.110']) {
      expect(addressRefusal(ok), ok).toBeNull();
    }
    const refused: Record<string, RegExp> = {
      '127.0.0.1': /loopback/,
      '10.1.2.3': /private/,
      '172.16.0.1': /private/,
      '192.168.1.1': /private/,
      '169.254.169.254': /link-local/,
      '100.64.0.1': /carrier-grade NAT/,
      '100.100.100.200': /carrier-grade NAT/,
      '0.0.0.0': /unspecified/,
      '224.0.0.1': /multicast/,
      '255.255.255.255': /broadcast/,
      '192.0.2.1': /reserved/,
      '240.0.0.1': /reserved/,
      '168.63.129.16': /metadata/,
      '::1': /loopback/,
      '::': /unspecified/,
      'fe80::1': /link-local/,
      'fd00:ec2::254': /unique-local/,
      'fc00::1': /unique-local/,
      'ff02::1': /multicast/,
      '::ffff:127.0.0.1': /loopback/,
      '::ffff:10.0.0.1': /private/,
      '::ffff:169.254.169.254': /link-local/,
      '::127.0.0.1': /loopback/,
      '64:ff9b::a00:1': /private/,
      '::7f00:1': /loopback/,
      '::8efa:4a6e': /IPv4-compatible/,
      '2001:db8::1': /reserved/,
    };
    for (const [address, why] of Object.entries(refused)) expect(addressRefusal(address), address).toMatch(why);
  });
});

/**
 * Every way a URL can write an IPv4 address: as the URL parser reads numbers (one decimal number,
 * hex, octal, shortened), and inside IPv6: mapped (::ffff:0:0/96), translated (::ffff:0:0:0/96),
 * compatible (::/96), NAT64 (64:ff9b::/96, and 64:ff9b:1::/48 at each prefix length RFC 6052
 * allows inside it), 6to4 (2002::/16) and Teredo (2001::/32, the client address inverted).
 */
function ipv4Forms(dotted: string): [form: string, url: string][] {
  const o = dotted.split('.').map(Number) as [number, number, number, number];
  const n = ((o[0] << 24) | (o[1] << 16) | (o[2] << 8) | o[3]) >>> 0;
  const hex = (v: number) => v.toString(16);
  const hi = (o[0] << 8) | o[1];
  const lo = (o[2] << 8) | o[3];
  const six = (groups: number[]) => `https://[${groups.map(hex).join(':')}]/push`;
  return [
    ['dotted', `https://${dotted}/push`],
    ['one decimal number', `https://${n}/push`],
    ['one hex number', `https://0x${hex(n)}/push`],
    ['octal parts', `https://${o.map((x) => `0${x.toString(8)}`).join('.')}/push`],
    ['hex parts', `https://${o.map((x) => `0x${hex(x)}`).join('.')}/push`],
    ['shortened a.b', `https://${o[0]}.${(o[1] << 16) | lo}/push`],
    ['shortened a.b.c', `https://${o[0]}.${o[1]}.${lo}/push`],
    ['IPv4-mapped, dotted', `https://[::ffff:${dotted}]/push`],
    ['IPv4-mapped, hex', six([0, 0, 0, 0, 0, 0xffff, hi, lo])],
    ['IPv4-translated', `https://[::ffff:0:${dotted}]/push`],
    ['IPv4-compatible, dotted', `https://[::${dotted}]/push`],
    ['IPv4-compatible, hex', six([0, 0, 0, 0, 0, 0, hi, lo])],
    ['NAT64 well-known prefix, dotted', `https://[64:ff9b::${dotted}]/push`],
    ['NAT64 well-known prefix, hex', six([0x64, 0xff9b, 0, 0, 0, 0, hi, lo])],
    ['NAT64 local-use /96', six([0x64, 0xff9b, 1, 0, 0, 0, hi, lo])],
    ['NAT64 local-use /64', six([0x64, 0xff9b, 1, 0, o[0], (o[1] << 8) | o[2], o[3] << 8, 0])],
    ['NAT64 local-use /56', six([0x64, 0xff9b, 1, o[0], o[1], lo, 0, 0])],
    ['NAT64 local-use /48', six([0x64, 0xff9b, 1, hi, o[2], o[3] << 8, 0, 0])],
    ['6to4', six([0x2002, hi, lo, 0, 0, 0, 0, 1])],
    // Teredo: server 65.54.227.120 (public), client address = the bitwise NOT of the last 32 bits.
    ['Teredo client', six([0x2001, 0, 0x4136, 0xe378, 0x8000, 0x63bf, ~hi & 0xffff, ~lo & 0xffff])],
    ['Teredo server', six([0x2001, 0, hi, lo, 0x8000, 0x63bf, 0xbd55, 0x8d91])],
  ];
}

describe('an internal IPv4 address in every form', () => {
  const noDns: HostResolver = async (host) => {
    throw new Error(`no DNS in this test (${host})`);
  };
  const TARGETS: [string, RegExp][] = [
    ['127.0.0.1', /loopback/],
    ['10.0.0.1', /private/],
    ['169.254.169.254', /link-local/],
  ];
  for (const [target, why] of TARGETS) {
    for (const [form, url] of ipv4Forms(target)) {
      it(`refuses ${target} written as ${form} (${url})`, async () => {
        expect(await refusal(url, noDns)).toMatch(why);
      });
    }
  }

  it('reads the embedded address, so the same forms of a public address pass (IPv4-compatible excepted)', async () => {
    for (const [form, url] of ipv4Forms('142.250.74.110')) {
      const outcome = await refusal(url, noDns);
      if (form.startsWith('IPv4-compatible')) expect(outcome, form).toMatch(/IPv4-compatible/);
      else if (/local-use \/(48|56|64)/.test(form)) {
        // Its prefix length is the operator's choice, so each layout is read, and one reading of
        // a public address can be internal: refused then, never accepted for an internal one.
        expect(outcome, `${form} ${url}`).toMatch(/^accepted$|local-use NAT64/);
      } else expect(outcome, `${form} ${url}`).toBe('accepted');
    }
  });

  it('refuses all of ::/96', () => {
    for (const address of ['::', '::1', '::2', '::8efa:4a6e', '::ffff', '::1.2.3.4']) {
      expect(addressRefusal(address), address).not.toBeNull();
    }
  });
});

describe('endpoints', () => {
  const { resolver } = stub({
    'fcm.googleapis.com': ['142.250.74.110', '2a00:1450:4007:80c::200a'],
    localhost: ['127.0.0.1', '::1'],
    'internal.example': ['10.0.0.5'],
    'mixed.example': ['142.250.74.110', '127.0.0.1'],
    'mapped.example': ['::ffff:127.0.0.1'],
  });

  it('accepts an https URL whose host resolves to public addresses, and returns the addresses to connect to', async () => {
    const checked = await resolvePushEndpoint('https://fcm.googleapis.com/fcm/send/abc', NONE, resolver);
    expect(checked.addresses).toEqual([
      { address: '142.250.74.110', family: 4 },
      { address: '2a00:1450:4007:80c::200a', family: 6 },
    ]);
    expect(checked.url.hostname).toBe('fcm.googleapis.com');
  });

  it('refuses other schemes, credentials in the URL, and internal addresses written or resolved', async () => {
    expect(await refusal('http://fcm.googleapis.com/fcm/send/abc', resolver)).toMatch(/https/);
    expect(await refusal('file:///etc/passwd', resolver)).toMatch(/https/);
    expect(await refusal('javascript:alert(1)', resolver)).toMatch(/https/);
    expect(await refusal('not a url', resolver)).toMatch(/not a URL/);
    expect(await refusal('https://user:pw@fcm.googleapis.com/x', resolver)).toMatch(/user name/);
    expect(await refusal('https://127.0.0.1/x', resolver)).toMatch(/loopback/);
    expect(await refusal('https://2130706433/x', resolver)).toMatch(/loopback/); // 127.0.0.1 as one number
    expect(await refusal('https://10.0.0.1:8443/x', resolver)).toMatch(/private/);
    expect(await refusal('https://169.254.169.254/latest/meta-data/', resolver)).toMatch(/link-local/);
    expect(await refusal('https://[::1]/x', resolver)).toMatch(/loopback/);
    expect(await refusal('https://[::ffff:127.0.0.1]/x', resolver)).toMatch(/loopback/);
    expect(await refusal('https://localhost/x', resolver)).toMatch(/loopback address \(127\.0\.0\.1\)/);
    expect(await refusal('https://internal.example/x', resolver)).toMatch(/private/);
    expect(await refusal('https://mapped.example/x', resolver)).toMatch(/loopback/);
    // Every address of the host must be public, not only the first.
    expect(await refusal('https://mixed.example/x', resolver)).toMatch(/loopback/);
    expect(await refusal('https://nowhere.example/x', resolver)).toMatch(/could not be resolved/);
  });

  it('exempts hosts listed by name or inside a listed range from the address and https rules', async () => {
    const byName = { hosts: ['internal.example'], ranges: [] };
    expect(await refusal('http://internal.example:8080/push', resolver, byName)).toBe('accepted');
    expect(await refusal('https://localhost/x', resolver, byName)).toMatch(/loopback/);
    const byRange = { hosts: [], ranges: ['127.0.0.0/8', '::1/128'] };
    expect(await refusal('http://localhost:9999/x', resolver, byRange)).toBe('accepted');
    expect(await refusal('http://[::ffff:127.0.0.1]:9999/x', resolver, byRange)).toBe('accepted');
    expect(await refusal('http://internal.example/x', resolver, byRange)).toMatch(/https/);
    // A host resolving partly outside the listed ranges is not exempt.
    expect(await refusal('https://mixed.example/x', resolver, { hosts: [], ranges: ['127.0.0.0/8'] })).toMatch(
      /loopback/,
    );
  });
});

describe('the send connects to the address that was checked', () => {
  let server: http.Server;
  let port: number;
  const seen: { host?: string; path?: string }[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push({ host: req.headers.host, path: req.url });
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end('x'.repeat(200_000));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('asks DNS once, then connects to that answer even when DNS would now say otherwise', async () => {
    // The first answer is the local server (allowed by the range); any later answer points
    // nowhere. A second lookup at connection time would fail to connect.
    let answers = 0;
    const resolver: HostResolver = async () =>
      answers++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '127.0.0.9', family: 4 }];
    const target = await resolvePushEndpoint(
      `http://rebind.test:${port}/push/1`,
      { hosts: [], ranges: ['127.0.0.1/32'] },
      resolver,
    );
    const answer = await pinnedRequest('webpush', target, {
      method: 'POST',
      headers: { ttl: '60' },
      body: new Uint8Array([1]),
    });
    expect(answers).toBe(1);
    expect(answer.status).toBe(400);
    expect(seen.at(-1)).toEqual({ host: `rebind.test:${port}`, path: '/push/1' });
    // The reply is read only up to a bound.
    expect(answer.text.length).toBeLessThanOrEqual(64 * 1024);
  });
});
