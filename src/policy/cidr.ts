import ipaddr from "ipaddr.js";

// CIDR lists in settings (SLUICE_ALLOWED_CIDRS): parsed and normalised once, when the config is
// read; the SSRF guard (delivery/network-guard.ts) matches addresses against the result.

/**
 * Parses a comma-separated CIDR list ("127.0.0.0/8, ::1/128"). A bare address counts as a single
 * host (/32 or /128). Returns normalised entries; throws naming the first bad one.
 */
export function parseCidrList(list: string): string[] {
  const out: string[] = [];
  for (const raw of list.split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    out.push(normaliseCidr(entry));
  }
  return out;
}

function normaliseCidr(entry: string): string {
  const slash = entry.indexOf("/");
  const addrPart = slash === -1 ? entry : entry.slice(0, slash);
  const bitsPart = slash === -1 ? null : entry.slice(slash + 1);
  // Only canonical dotted-quad / IPv6 text here: "10.1/8" style shorthand in config is more likely a typo.
  const isV4 = ipaddr.IPv4.isValidFourPartDecimal(addrPart);
  const isV6 = !isV4 && !addrPart.includes("%") && ipaddr.IPv6.isValid(addrPart);
  if (!isV4 && !isV6) {
    throw new Error(`Invalid CIDR '${entry}': '${addrPart}' is not an IPv4 or IPv6 address (expected e.g. 127.0.0.0/8 or ::1/128).`);
  }
  const maxBits = isV4 ? 32 : 128;
  let bits = maxBits;
  if (bitsPart !== null) {
    if (!/^\d{1,3}$/.test(bitsPart) || Number(bitsPart) > maxBits) {
      throw new Error(`Invalid CIDR '${entry}': prefix length must be 0-${maxBits}.`);
    }
    bits = Number(bitsPart);
  }
  return `${ipaddr.parse(addrPart).toString()}/${bits}`;
}
