// Web Push subscription endpoints come from browsers and are untrusted: a page could register
// `http://127.0.0.1:6379/` or the cloud metadata address and have the server POST there. An
// endpoint must be an https URL whose host resolves only to public unicast addresses (never
// loopback, private, link-local, CGNAT, unique-local, multicast, reserved or metadata addresses).
// An IPv6 address that carries an IPv4 address (mapped, translated, NAT64, 6to4, Teredo) reaches
// that IPv4 host, so the IPv4 address inside is held to the IPv4 rules; the deprecated
// IPv4-compatible range ::/96 is refused whole. The check runs when a subscription is registered and again at
// each send, and the send connects to the very address that was checked (see pinned-request.ts),
// so a DNS answer that changes in between cannot redirect it. Hosts named in
// PUSH_ENDPOINT_ALLOWLIST, and addresses inside its CIDR ranges, are exempt from the address and
// https rules (tests with local push services, private deployments).
import dns from 'node:dns';
import ipaddr from 'ipaddr.js';
import type { PushEndpointAllowlist } from '../../config.js';
import { ValidationError } from '../../errors.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (a stub in tests). */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

const RESOLVE_TIMEOUT_MS = 5_000;

export const systemResolver: HostResolver = async (hostname) => {
  const found = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** An endpoint that passed the rules, with the addresses (all checked) to connect to. */
export interface CheckedEndpoint {
  url: URL;
  addresses: ResolvedAddress[];
}

export class EndpointRefusedError extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** Public addresses that still reach a cloud platform's internal services. */
const METADATA = [ipaddr.parseCIDR('168.63.129.16/32')]; // Azure WireServer

const RANGE_NAMES: Record<string, string> = {
  unspecified: 'an unspecified address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address (this includes cloud metadata services)',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT address',
  private: 'a private address',
  uniqueLocal: 'a unique-local address',
};

/** The IPv4 address inside an IPv4-mapped IPv6 address, else the address itself. */
function unmapped(address: Address): Address {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
}

const v6 = (cidr: string) => ipaddr.IPv6.parseCIDR(cidr);
const COMPATIBLE = v6('::/96');
const NAT64_LOCAL = v6('64:ff9b:1::/48');
/** Forms whose last 32 bits are the IPv4 address they reach. */
const LAST_32_BITS: [string, [ipaddr.IPv6, number]][] = [
  ['an IPv4-mapped', v6('::ffff:0:0/96')],
  ['an IPv4-translated', v6('::ffff:0:0:0/96')],
  ['a NAT64', v6('64:ff9b::/96')],
  ['an IPv4-compatible', COMPATIBLE],
];

const ipv4 = (bytes: number[]) => new ipaddr.IPv4(bytes.map((b) => b & 0xff));

/**
 * Where a local-use NAT64 address (64:ff9b:1::/48) may carry its IPv4 address: its prefix may be
 * /48, /56, /64 (RFC 6052 layouts: the "u" octet, byte 8, is zero, and so is the suffix after the
 * IPv4 bytes) or /96 (the last 4 bytes). Shortest first: the layout a plausible address most
 * likely has.
 */
const NAT64_LOCAL_LAYOUTS: { bytes: number[]; zeroFrom: number }[] = [
  { bytes: [6, 7, 9, 10], zeroFrom: 11 },
  { bytes: [7, 9, 10, 11], zeroFrom: 12 },
  { bytes: [9, 10, 11, 12], zeroFrom: 13 },
];

/**
 * The IPv4 addresses an IPv6 address carries, with the name of its form; null for any other
 * address. A local-use NAT64 address is read in every layout it could have.
 */
function carriedIPv4(address: ipaddr.IPv6): { form: string; addresses: ipaddr.IPv4[] } | null {
  const b = address.toByteArray();
  const last32 = ipv4(b.slice(12, 16));
  for (const [form, [net, bits]] of LAST_32_BITS) {
    if (address.match(net, bits)) return { form, addresses: [last32] };
  }
  if (address.match(...NAT64_LOCAL)) {
    const plausible = NAT64_LOCAL_LAYOUTS.filter(
      ({ zeroFrom }) => b[8] === 0 && b.slice(zeroFrom).every((x) => x === 0),
    );
    return {
      form: 'a local-use NAT64',
      addresses: [...plausible.map(({ bytes }) => ipv4(bytes.map((i) => b[i]!))), last32],
    };
  }
  const range = address.range();
  if (range === '6to4') return { form: 'a 6to4', addresses: [ipv4(b.slice(2, 6))] };
  if (range === 'teredo') {
    // the Teredo server, and the client: the bitwise NOT of the last 32 bits
    return { form: 'a Teredo', addresses: [ipv4(b.slice(4, 8)), ipv4(b.slice(12, 16).map((x) => ~x))] };
  }
  return null;
}

function rangeRefusal(address: Address): string | null {
  const range = address.range();
  if (range !== 'unicast') return RANGE_NAMES[range] ?? `a reserved address (${range})`;
  if (METADATA.some(([net, bits]) => net.kind() === address.kind() && address.match(net, bits))) {
    return 'a cloud metadata address';
  }
  return null;
}

/** Parses an address as written: ipaddr.js reads the IPv4-compatible `::a.b.c.d` as IPv4-mapped. */
function parseAddress(raw: string): Address {
  const compatible = /^::(\d{1,3}(?:\.\d{1,3}){3})$/.exec(raw);
  if (compatible && ipaddr.IPv4.isValidFourPartDecimal(compatible[1]!)) {
    return ipaddr.fromByteArray([...new Array(12).fill(0), ...ipaddr.IPv4.parse(compatible[1]!).toByteArray()]);
  }
  return ipaddr.parse(raw);
}

/** Why a push may not be sent to this address, or null when it is public unicast. */
export function addressRefusal(raw: string): string | null {
  let address: Address;
  try {
    address = parseAddress(raw);
  } catch {
    return 'an address that cannot be read';
  }
  if (address.kind() === 'ipv4') return rangeRefusal(address);
  const six = address as ipaddr.IPv6;
  const range = six.range();
  if (range === 'unspecified' || range === 'loopback') return RANGE_NAMES[range]!;
  const carried = carriedIPv4(six);
  if (!carried) return rangeRefusal(six);
  for (const inner of carried.addresses) {
    const why = rangeRefusal(inner);
    if (why) return `${why} (${inner.toString()} inside ${carried.form} address)`;
  }
  if (six.match(...COMPATIBLE)) return 'an IPv4-compatible IPv6 address (deprecated; no push service uses one)';
  return null;
}

function inRanges(raw: string, ranges: readonly string[]): boolean {
  let address: Address;
  try {
    address = unmapped(parseAddress(raw));
  } catch {
    return false;
  }
  return ranges.some((range) => {
    const [net, bits] = ipaddr.parseCIDR(range);
    return net.kind() === address.kind() && address.match(net, bits);
  });
}

/** The literal address of a URL host (`127.0.0.1`, `[::1]`), or null for a name. */
function literalAddress(hostname: string): ResolvedAddress | null {
  const bare = hostname.replace(/^\[(.*)\]$/, '$1');
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) return { address: bare, family: 4 };
  if (bare !== hostname && ipaddr.IPv6.isValid(bare)) return { address: bare, family: 6 };
  return null;
}

async function resolve(hostname: string, resolver: HostResolver): Promise<ResolvedAddress[]> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      resolver(hostname),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), RESOLVE_TIMEOUT_MS);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Checks a subscription endpoint and returns the addresses to connect to; throws
 * EndpointRefusedError with our reason when it may not be used. With `check` only (registration),
 * a host listed by name in the allowlist is not resolved at all (no addresses).
 */
export async function resolvePushEndpoint(
  raw: string,
  allowlist: PushEndpointAllowlist,
  resolver: HostResolver = systemResolver,
  mode: 'connect' | 'check' = 'connect',
): Promise<CheckedEndpoint> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new EndpointRefusedError('it is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new EndpointRefusedError(`it must be an https: URL, not ${url.protocol}`);
  }
  if (url.username || url.password) throw new EndpointRefusedError('it must not carry a user name or password');
  const hostname = url.hostname.toLowerCase();
  const listed = allowlist.hosts.includes(hostname.replace(/\.$/, ''));
  if (url.protocol !== 'https:' && !listed && allowlist.ranges.length === 0) {
    throw new EndpointRefusedError('it must be an https: URL');
  }
  if (listed && mode === 'check') return { url, addresses: [] };
  let addresses: ResolvedAddress[];
  const literal = literalAddress(hostname);
  if (literal) addresses = [literal];
  else {
    try {
      addresses = await resolve(hostname, resolver);
    } catch {
      throw new EndpointRefusedError(`its host ${hostname} could not be resolved`);
    }
    if (addresses.length === 0) throw new EndpointRefusedError(`its host ${hostname} has no address`);
  }
  const exempt = listed || addresses.every((a) => inRanges(a.address, allowlist.ranges));
  if (!exempt) {
    if (url.protocol !== 'https:') throw new EndpointRefusedError('it must be an https: URL');
    for (const a of addresses) {
      const why = addressRefusal(a.address);
      if (why) throw new EndpointRefusedError(`its host resolves to ${why} (${a.address})`);
    }
  }
  return { url, addresses };
}

/** The registration-time check: 400 INVALID_REQUEST at `path` when the endpoint may not be used. */
export async function checkPushEndpoint(
  raw: string,
  allowlist: PushEndpointAllowlist,
  path: string,
  resolver: HostResolver = systemResolver,
): Promise<void> {
  try {
    await resolvePushEndpoint(raw, allowlist, resolver, 'check');
  } catch (err) {
    if (!(err instanceof EndpointRefusedError)) throw err;
    throw new ValidationError(
      `The push subscription endpoint cannot be used: ${err.reason}. Endpoints must be https URLs of a public push service.`,
      [{ path, message: `is refused: ${err.reason}` }],
    );
  }
}
