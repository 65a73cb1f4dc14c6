// SSRF guard: deliveries may only reach public unicast addresses unless the operator opts in
// (SLUICE_ALLOW_PRIVATE_NETWORKS / SLUICE_ALLOWED_CIDRS). The check runs on the address actually
// connected to (via the socket's `lookup` hook), so a DNS answer that changes between validation
// and connect (rebinding) cannot slip through.
import type { LookupAddress, LookupOptions } from "node:dns";
import type { LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";
import { SluiceError } from "../errors.js";
import { createResolver } from "./resolve.js";

type IP = ipaddr.IPv4 | ipaddr.IPv6;

export interface NetworkPolicy {
  allowPrivateNetworks: boolean;
  /** CIDRs such as `127.0.0.0/8` or `::1/128`, as returned by parseCidrList (policy/cidr.ts). */
  allowedCidrs: string[];
}

/** An address (`address`, an IP) the policy refuses; `reason` is its class ("a loopback address"). */
export class BlockedAddressError extends SluiceError<"SLUICE_DELIVERY_BLOCKED_ADDRESS"> {
  readonly address: string;
  readonly hostname: string | undefined;

  constructor(address: string, reason: string, hostname?: string) {
    const target = hostname !== undefined && hostname !== address ? `${hostname} (${address})` : address;
    super("SLUICE_DELIVERY_BLOCKED_ADDRESS", { target, reason, cidr: exampleCidr(address) ?? address });
    this.name = "BlockedAddressError";
    this.address = address;
    this.hostname = hostname;
  }
}

// Policies are built once and checked on every new connection: parse their CIDRs once.
const parsedCidrs = new WeakMap<string[], Array<[IP, number]>>();

function cidrsOf(policy: NetworkPolicy): Array<[IP, number]> {
  let parsed = parsedCidrs.get(policy.allowedCidrs);
  if (parsed === undefined) {
    parsed = policy.allowedCidrs.map((c) => ipaddr.parseCIDR(c));
    parsedCidrs.set(policy.allowedCidrs, parsed);
  }
  return parsed;
}

function inCidrs(addr: IP, cidrs: Array<[IP, number]>): boolean {
  for (const cidr of cidrs) {
    if (cidr[0].kind() === addr.kind() && addr.match(cidr)) return true;
  }
  return false;
}

function v4FromParts(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

// ipaddr.js range names as a person would say them, with their article.
const RANGE_WORDS: Record<string, string> = {
  loopback: "a loopback",
  private: "a private-network",
  linkLocal: "a link-local",
  uniqueLocal: "a unique-local (private IPv6)",
  unspecified: "an unspecified",
  broadcast: "a broadcast",
  multicast: "a multicast",
  carrierGradeNat: "a carrier-grade NAT",
  reserved: "a reserved",
  deprecatedSiteLocal: "a site-local",
  discard: "a discard-only",
  benchmarking: "a benchmarking",
};

function rangeWords(range: string): string {
  return RANGE_WORDS[range] ?? `a ${range}`;
}

/** Why an address is not public unicast ("a loopback address"), or null when it is. */
function nonPublicReason(addr: IP): string | null {
  if (addr.kind() === "ipv4") {
    const range = (addr as ipaddr.IPv4).range();
    if (range === "unicast") return null;
    // The address every cloud's instance metadata (and its credentials) is served from.
    if (addr.toString() === "169.254.169.254") return "a link-local address (the cloud metadata service)";
    return `${rangeWords(range)} address`;
  }
  const v6 = addr as ipaddr.IPv6;
  const range = v6.range();
  const p = v6.parts;
  // Forms that embed an IPv4 address are judged by the IPv4 address they reach.
  switch (range) {
    case "ipv4Mapped":
    case "rfc6145":
      return embedded(v4FromParts(p[6]!, p[7]!), range === "ipv4Mapped" ? "IPv4-mapped" : "IPv4-translated");
    case "rfc6052":
      // Only the well-known NAT64 prefix 64:ff9b::/96 has a fixed layout; the local-use /48 does not.
      if (p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0) return embedded(v4FromParts(p[6]!, p[7]!), "NAT64");
      return "local-use NAT64 address";
    case "6to4":
      return embedded(v4FromParts(p[1]!, p[2]!), "6to4");
    case "teredo":
      // Teredo: server IPv4 in bits 32-63, client IPv4 bit-inverted in the last 32 bits.
      return embedded(v4FromParts(p[2]!, p[3]!), "Teredo server") ?? embedded(v4FromParts(p[6]! ^ 0xffff, p[7]! ^ 0xffff), "Teredo client");
    case "unicast":
      // Deprecated IPv4-compatible ::a.b.c.d and anything outside global unicast 2000::/3 is not a real destination.
      if ((p[0]! & 0xe000) !== 0x2000) return "a non-global IPv6 address";
      return null;
    default:
      return `${rangeWords(range)} address`;
  }
}

function embedded(v4: ipaddr.IPv4, form: string): string | null {
  const range = v4.range();
  return range === "unicast" ? null : `the ${form} form of the ${rangeWords(range).replace(/^an? /, "")} address ${v4.toString()}`;
}

/** A CIDR to quote in advice on allowing `address`: the loopback block, else the address itself. */
function exampleCidr(address: string): string | null {
  let addr = parseAddress(address);
  if (addr === null) return null;
  // An IPv4 allowance covers ::ffff:a.b.c.d (see isAddressAllowed), and reads better.
  if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress()) addr = (addr as ipaddr.IPv6).toIPv4Address();
  if (addr.kind() === "ipv4") return addr.range() === "loopback" ? "127.0.0.0/8" : `${addr.toString()}/32`;
  return `${addr.toString()}/128`;
}

/** How to allow `address` ("set SLUICE_ALLOW_PRIVATE_NETWORKS=1 or add it to …"), lower-case. */
function allowHint(address: string): string {
  const cidr = exampleCidr(address);
  return `set SLUICE_ALLOW_PRIVATE_NETWORKS=1 or add it to SLUICE_ALLOWED_CIDRS${cidr === null ? "" : ` (e.g. ${cidr})`} to allow it`;
}

function parseAddress(address: string): IP | null {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(bare)) return null;
  try {
    return ipaddr.parse(bare);
  } catch {
    return null;
  }
}

export function isAddressAllowed(address: string, policy: NetworkPolicy): { allowed: boolean; reason?: string } {
  const addr = parseAddress(address);
  if (addr === null) return { allowed: false, reason: "not an IP address" };
  if (policy.allowPrivateNetworks) return { allowed: true };
  const reason = nonPublicReason(addr);
  if (reason === null) return { allowed: true };
  if (policy.allowedCidrs.length > 0) {
    const cidrs = cidrsOf(policy);
    if (inCidrs(addr, cidrs)) return { allowed: true };
    // ::ffff:127.0.0.1 is the same endpoint as 127.0.0.1, so an IPv4 allowance covers it.
    if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress() && inCidrs((addr as ipaddr.IPv6).toIPv4Address(), cidrs)) {
      return { allowed: true };
    }
  }
  return { allowed: false, reason };
}

/** Throws BlockedAddressError when `hostname` (a URL's hostname) is an IP literal the policy refuses. */
export function checkLiteralHost(hostname: string, policy: NetworkPolicy): void {
  // Node's net.connect never calls `lookup` for IP literals, so they are checked here instead.
  const addr = parseAddress(hostname);
  if (addr === null) return;
  const verdict = isAddressAllowed(addr.toString(), policy);
  if (!verdict.allowed) throw new BlockedAddressError(hostname, verdict.reason ?? "not allowed");
}

/** `localhost` and every `*.localhost` name: loopback by definition (RFC 6761), whatever DNS says. */
export function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}

/**
 * Why a URL's hostname cannot be delivered to under `policy` when that is known without DNS —
 * an IP literal the policy refuses, or a localhost name while loopback is refused — as a sentence
 * for the API ("127.0.0.1 is a loopback address, which …; set … to allow it"); else null. Other
 * names are not resolved here: their answer at send time is what counts, and is checked then.
 */
export function literalHostRefusal(hostname: string, policy: NetworkPolicy): string | null {
  const addr = parseAddress(hostname);
  if (addr !== null) {
    const verdict = isAddressAllowed(addr.toString(), policy);
    if (verdict.allowed) return null;
    return `${hostname} is ${verdict.reason ?? "an address that is not allowed"}, which this Sluice does not deliver to; ${allowHint(addr.toString())}`;
  }
  if (!isLocalhostName(hostname)) return null;
  // Send time drops refused answers and uses an allowed one, so either loopback family will do.
  if (isAddressAllowed("127.0.0.1", policy).allowed || isAddressAllowed("::1", policy).allowed) return null;
  return (
    `${hostname} is a loopback name (127.0.0.1 / ::1), which this Sluice does not deliver to; ` +
    "set SLUICE_ALLOW_PRIVATE_NETWORKS=1 or add it to SLUICE_ALLOWED_CIDRS (e.g. 127.0.0.0/8,::1/128) to allow it"
  );
}

/**
 * A `lookup` for net.connect / tls.connect / undici's `connect` options: resolves (resolve.ts: off
 * libuv's thread pool) and hands the socket only addresses the policy allows, failing with
 * BlockedAddressError when none is. Refused answers are dropped rather than failing the whole
 * name so that `localhost` with SLUICE_ALLOWED_CIDRS=127.0.0.0/8 still works although it also
 * resolves to ::1.
 */
export function guardedLookup(policy: NetworkPolicy, dnsServers: readonly string[] = []): LookupFunction {
  // Names DNS lacks (/etc/hosts, the search list) point inside: asked of the system only where
  // the policy admits addresses outside the public internet.
  const systemFallback = policy.allowPrivateNetworks || policy.allowedCidrs.length > 0;
  const resolve = createResolver({ servers: dnsServers, systemFallback });
  return (hostname: string, options: LookupOptions, callback) => {
    const wantAll = options.all === true;
    const family = options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0;
    // Always every answer, so a refused first answer can fall back to an allowed one.
    resolve(hostname, family, (err, addresses: LookupAddress[]) => {
      if (err) return wantAll ? callback(err, []) : callback(err, "", 0);
      let refusal: BlockedAddressError | null = null;
      const usable = addresses.filter((a) => {
        const verdict = isAddressAllowed(a.address, policy);
        if (!verdict.allowed) refusal ??= new BlockedAddressError(a.address, verdict.reason ?? "not allowed", hostname);
        return verdict.allowed;
      });
      const first = usable[0];
      if (first === undefined) {
        // No answer at all is a DNS failure (retried as "dns"), not a refusal by the policy.
        const failed = refusal ?? Object.assign(new Error(`${hostname} resolved to no address`), { code: "ENOTFOUND", hostname });
        return wantAll ? callback(failed, []) : callback(failed, "", 0);
      }
      if (wantAll) callback(null, usable);
      else callback(null, first.address, first.family);
    });
  };
}
