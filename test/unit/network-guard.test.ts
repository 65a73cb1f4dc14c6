import { test } from "node:test";
import assert from "node:assert/strict";
import type { LookupAddress } from "node:dns";
import {
  BlockedAddressError,
  checkLiteralHost,
  guardedLookup,
  isAddressAllowed,
  isLocalhostName,
  literalHostRefusal,
  type NetworkPolicy,
} from "../../src/delivery/network-guard.js";
import { parseCidrList } from "../../src/policy/cidr.js";

const strict: NetworkPolicy = { allowPrivateNetworks: false, allowedCidrs: [] };
const open: NetworkPolicy = { allowPrivateNetworks: true, allowedCidrs: [] };

const publicAddresses = [
  "8.8.8.8",
  "1.1.1.1",
  "2606:4700::1111",
  "2001:4860:4860::8888",
  "::ffff:8.8.8.8",
  "64:ff9b::808:808",
  "2002:808:808::1",
];

const refusedAddresses = [
  "127.0.0.1",
  "127.255.255.254",
  new URL("http://127.1/").hostname,
  new URL("http://0x7f000001/").hostname,
  new URL("http://2130706433/").hostname,
  "10.0.0.1",
  "10.255.255.255",
  "172.16.0.1",
  "172.31.255.255",
  "192.168.1.1",
  "169.254.169.254",
  "100.64.0.1",
  "0.0.0.0",
  "0.1.2.3",
  "224.0.0.1",
  "255.255.255.255",
  "240.0.0.1",
  "192.0.2.1",
  "198.18.0.1",
  "::1",
  "::",
  "fe80::1",
  "fe80::1%eth0",
  "fc00::1",
  "fd12:3456::1",
  "ff02::1",
  "::ffff:127.0.0.1",
  "::ffff:7f00:1",
  "::ffff:10.0.0.1",
  "::ffff:169.254.169.254",
  "[::ffff:7f00:1]",
  "::127.0.0.1",
  "64:ff9b::7f00:1",
  "64:ff9b::a00:1",
  "2002:7f00:1::",
  "2002:a00:1::1",
  "fec0::1",
  "2001:db8::1",
];

test("public unicast addresses are allowed", () => {
  for (const addr of publicAddresses) {
    assert.deepEqual(isAddressAllowed(addr, strict), { allowed: true }, addr);
  }
});

test("loopback, private, link-local and other non-public addresses are refused with a reason", () => {
  assert.equal(new URL("http://127.1/").hostname, "127.0.0.1");
  for (const addr of refusedAddresses) {
    const verdict = isAddressAllowed(addr, strict);
    assert.equal(verdict.allowed, false, addr);
    assert.ok(verdict.reason !== undefined && verdict.reason.length > 0, addr);
  }
});

test("allowPrivateNetworks lets every non-public address through", () => {
  for (const addr of refusedAddresses) {
    assert.equal(isAddressAllowed(addr, open).allowed, true, addr);
  }
});

test("something that is not an IP address is refused even with private networks allowed", () => {
  for (const addr of ["localhost", "", "example.com", "1.2.3.4.5", "::g"]) {
    assert.equal(isAddressAllowed(addr, open).allowed, false, addr);
  }
});

test("allowedCidrs admits only addresses inside them", () => {
  const policy: NetworkPolicy = { allowPrivateNetworks: false, allowedCidrs: parseCidrList("127.0.0.0/8") };
  assert.equal(isAddressAllowed("127.0.0.1", policy).allowed, true);
  assert.equal(isAddressAllowed("127.9.8.7", policy).allowed, true);
  assert.equal(isAddressAllowed("::ffff:127.0.0.1", policy).allowed, true);
  assert.equal(isAddressAllowed("10.0.0.1", policy).allowed, false);
  assert.equal(isAddressAllowed("::1", policy).allowed, false);
  assert.equal(isAddressAllowed("169.254.169.254", policy).allowed, false);
  assert.equal(isAddressAllowed("8.8.8.8", policy).allowed, true);

  const v6: NetworkPolicy = { allowPrivateNetworks: false, allowedCidrs: parseCidrList("::1/128, 10.1.0.0/16") };
  assert.equal(isAddressAllowed("::1", v6).allowed, true);
  assert.equal(isAddressAllowed("10.1.2.3", v6).allowed, true);
  assert.equal(isAddressAllowed("10.2.0.1", v6).allowed, false);
  assert.equal(isAddressAllowed("127.0.0.1", v6).allowed, false);
});

test("parseCidrList normalises good entries and names the bad one", () => {
  assert.deepEqual(parseCidrList(""), []);
  assert.deepEqual(parseCidrList(" 127.0.0.0/8 , ::1/128,10.0.0.5 ,, fd00::/8"), ["127.0.0.0/8", "::1/128", "10.0.0.5/32", "fd00::/8"]);
  for (const bad of [
    "garbage",
    "127.0.0.0/33",
    "::1/129",
    "127.0.0.0/",
    "127.0.0.0/-1",
    "127.0.0.0/8x",
    "256.0.0.0/8",
    "127.1/8",
    "1.2.3.4/8/9",
    "localhost/32",
  ]) {
    assert.throws(
      () => parseCidrList(`10.0.0.0/8,${bad}`),
      (err: Error) => err.message.includes(`'${bad}'`),
      bad,
    );
  }
});

test("checkLiteralHost refuses non-public IP literals and ignores names", () => {
  for (const url of ["http://127.1/", "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://0x7f000001/", "http://10.0.0.1./"]) {
    assert.throws(
      () => checkLiteralHost(new URL(url).hostname, strict),
      (err: unknown) => {
        assert.ok(err instanceof BlockedAddressError);
        assert.equal(err.code, "SLUICE_DELIVERY_BLOCKED_ADDRESS");
        return true;
      },
      url,
    );
  }
  checkLiteralHost("example.com", strict);
  checkLiteralHost("8.8.8.8", strict);
  checkLiteralHost("[2606:4700::1111]", strict);
  checkLiteralHost("127.0.0.1", open);
});

test("literalHostRefusal refuses literals and localhost names the policy refuses, with the class and the setting", () => {
  const refused: [string, RegExp][] = [
    [
      "http://127.0.0.1/",
      /^127\.0\.0\.1 is a loopback address, .*SLUICE_ALLOW_PRIVATE_NETWORKS=1 .*SLUICE_ALLOWED_CIDRS \(e\.g\. 127\.0\.0\.0\/8\)/,
    ],
    ["http://127.1:8080/x", /^127\.0\.0\.1 is a loopback address/],
    ["http://2130706433/", /^127\.0\.0\.1 is a loopback address/],
    ["http://[::1]/", /^\[::1\] is a loopback address, .*\(e\.g\. ::1\/128\)/],
    ["http://[::ffff:127.0.0.1]/", /IPv4-mapped form of the loopback address 127\.0\.0\.1.*\(e\.g\. 127\.0\.0\.0\/8\)/],
    ["http://10.1.2.3/", /^10\.1\.2\.3 is a private-network address.*\(e\.g\. 10\.1\.2\.3\/32\)/],
    ["http://169.254.169.254/latest/meta-data", /^169\.254\.169\.254 is a link-local address \(the cloud metadata service\)/],
    ["http://[fd00::1]/", /unique-local/],
    ["http://0.0.0.0/", /unspecified address/],
    ["http://localhost:3000/", /^localhost is a loopback name .*SLUICE_ALLOW_PRIVATE_NETWORKS=1/],
    ["http://LocalHost./", /^localhost\. is a loopback name/],
    ["http://hooks.localhost/", /^hooks\.localhost is a loopback name/],
  ];
  for (const [url, message] of refused) {
    const refusal = literalHostRefusal(new URL(url).hostname, strict);
    assert.ok(refusal !== null, url);
    assert.match(refusal, message, url);
    assert.match(
      refusal,
      /which this Sluice does not deliver to; set SLUICE_ALLOW_PRIVATE_NETWORKS=1 or add it to SLUICE_ALLOWED_CIDRS/,
      url,
    );
    assert.equal(literalHostRefusal(new URL(url).hostname, open), null, url);
  }
  // Names other than localhost are not resolved: send time judges what they resolve to then.
  for (const url of [
    "https://example.com/",
    "http://localhost.example.com/",
    "http://mylocalhost/",
    "http://8.8.8.8/",
    "http://[2606:4700::1111]/",
  ]) {
    assert.equal(literalHostRefusal(new URL(url).hostname, strict), null, url);
  }
  const cidr: NetworkPolicy = { allowPrivateNetworks: false, allowedCidrs: parseCidrList("127.0.0.0/8") };
  assert.equal(literalHostRefusal("127.0.0.1", cidr), null);
  assert.equal(literalHostRefusal("[::ffff:7f00:1]", cidr), null);
  assert.equal(literalHostRefusal("localhost", cidr), null, "localhost has an allowed answer");
  assert.match(literalHostRefusal("[::1]", cidr)!, /loopback/);
  assert.match(literalHostRefusal("10.0.0.1", cidr)!, /private-network/);
  assert.equal(literalHostRefusal("localhost", { allowPrivateNetworks: false, allowedCidrs: parseCidrList("::1/128") }), null);
  assert.equal(isLocalhostName("a.b.localhost."), true);
  assert.equal(isLocalhostName("localhost.localdomain"), false);
});

test("a refused connection's message names the address, its class and the setting", () => {
  const err = new BlockedAddressError("127.0.0.1", isAddressAllowed("127.0.0.1", strict).reason!, "localhost");
  assert.equal(
    err.message,
    "Refused to connect to localhost (127.0.0.1): a loopback address, which this Sluice does not deliver to. " +
      "Set SLUICE_ALLOW_PRIVATE_NETWORKS=1 or add it to SLUICE_ALLOWED_CIDRS (e.g. 127.0.0.0/8) to allow it.",
  );
});

function lookupAll(policy: NetworkPolicy, host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    guardedLookup(policy)(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses as LookupAddress[])));
  });
}

function lookupOne(policy: NetworkPolicy, host: string): Promise<{ address: string; family: number | undefined }> {
  return new Promise((resolve, reject) => {
    guardedLookup(policy)(host, { family: 4 }, (err, address, family) =>
      err ? reject(err) : resolve({ address: address as string, family }),
    );
  });
}

test("guardedLookup refuses a name that resolves to loopback, in both callback forms", async () => {
  const isBlocked = (err: unknown) =>
    err instanceof BlockedAddressError && err.code === "SLUICE_DELIVERY_BLOCKED_ADDRESS" && /127\.0\.0\.1|::1/.test(err.address);
  await assert.rejects(lookupAll(strict, "localhost"), isBlocked);
  await assert.rejects(lookupOne(strict, "localhost"), isBlocked);
});

test("guardedLookup passes addresses through when they are allowed", async () => {
  const all = await lookupAll(open, "localhost");
  assert.ok(all.length > 0 && all.every((a) => typeof a.address === "string" && (a.family === 4 || a.family === 6)));
  const cidr: NetworkPolicy = { allowPrivateNetworks: false, allowedCidrs: ["127.0.0.0/8"] };
  assert.deepEqual(await lookupOne(cidr, "localhost"), { address: "127.0.0.1", family: 4 });
  // localhost may also resolve to ::1, which the CIDR does not cover: it is dropped, not fatal.
  const filtered = await lookupAll(cidr, "localhost");
  assert.ok(filtered.length > 0 && filtered.every((a) => a.address.startsWith("127.")), JSON.stringify(filtered));
});

test("guardedLookup reports resolver errors unchanged", async () => {
  await assert.rejects(
    lookupAll(strict, "nonexistent.invalid"),
    (err: NodeJS.ErrnoException) => err.code === "ENOTFOUND" || err.code === "EAI_AGAIN",
  );
});
