// Web Push subscription endpoints come from browsers and are untrusted: a page could register
// `http://127.0.0.1:6379/` or the cloud metadata address and have the server POST there. An
// endpoint must be an https URL whose host resolves only to public unicast addresses (never
// loopback, private, link-local, CGNAT, unique-local, multicast, reserved or metadata addresses,
// IPv4-mapped IPv6 included). The check runs when a subscription is registered and again at
// each send, and the send connects to the very address that was checked (see pinned-request.ts),
// so a DNS answer that changes in between cannot redirect it. Hosts named in
// PUSH_ENDPOINT_ALLOWLIST, and addresses inside its CIDR ranges, are exempt from the address and
// https rules (tests with local push services, private deployments).
import dns from 'node:dns';
import ipaddr from 'ipaddr.js';
import type { PushEndpointAllowlist } from '../config.js';
import { ValidationError } from '../errors.js';

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

/** Why a push may not be sent to this address, or null when it is public unicast. */
export function addressRefusal(raw: string): string | null {
  let address: Address;
  try {
    address = unmapped(ipaddr.parse(raw));
  } catch {
    return 'an address that cannot be read';
  }
  const range = address.range();
  if (range !== 'unicast') return RANGE_NAMES[range] ?? `a reserved address (${range})`;
  if (METADATA.some(([net, bits]) => net.kind() === address.kind() && address.match(net, bits))) {
    return 'a cloud metadata address';
  }
  return null;
}

function inRanges(raw: string, ranges: readonly string[]): boolean {
  let address: Address;
  try {
    address = unmapped(ipaddr.parse(raw));
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
