import { test, after } from "node:test";
import assert from "node:assert/strict";
import dns from "node:dns";
import { readFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { LookupAddress } from "node:dns";
import { createResolver, SYSTEM_LOOKUPS, type Answer, type ResolverOptions, type SystemLookup } from "../../src/delivery/resolve.js";
import { Sender, classifyError } from "../../src/delivery/sender.js";
import { startDnsStub, type StubReply } from "../helpers/dns-stub.js";

// Destination names resolve through a nameserver on loopback that the test controls: one that
// answers, one that never does (a dead nameserver), names it does not have.

const zone: Record<string, StubReply> = {
  "fast.test": { addresses: ["127.0.0.1"] },
  "both.test": { addresses: ["127.0.0.1", "::1"] },
  "slow.test": { drop: true },
};
const stub = await startDnsStub((name, type) => {
  if (name === "v4only.test") return type === "A" ? { addresses: ["127.0.0.1"] } : { drop: true };
  return zone[name] ?? { nxdomain: true };
});
after(() => stub.close());

function resolver(opts: Partial<ResolverOptions> = {}) {
  const resolve = createResolver({ servers: [stub.server], systemFallback: false, timeoutMs: 1000, tries: 1, ...opts });
  return (name: string, family: 0 | 4 | 6 = 0): Promise<LookupAddress[]> =>
    new Promise((ok, fail) => resolve(name, family, (err, addresses) => (err ? fail(err) : ok(addresses))));
}

test("a name the nameserver has resolves, IPv4 first; one family asked for gets only that", async () => {
  const resolve = resolver();
  assert.deepEqual(await resolve("both.test"), [
    { address: "127.0.0.1", family: 4 },
    { address: "::1", family: 6 },
  ]);
  assert.deepEqual(await resolve("both.test", 6), [{ address: "::1", family: 6 }]);
});

test("a name whose nameserver never answers holds no thread: others resolve, the pool stays free", async () => {
  const resolve = resolver({ timeoutMs: 5000 }); // long enough that none gives up while the others run
  let settled = 0;
  // More lookups than libuv's pool has threads (4): on getaddrinfo these would take them all.
  const slow = Array.from({ length: 16 }, () =>
    resolve("slow.test").then(
      () => assert.fail("slow.test has no answer"),
      (err: NodeJS.ErrnoException) => (settled++, err),
    ),
  );
  assert.deepEqual(await resolve("fast.test", 4), [{ address: "127.0.0.1", family: 4 }]);
  await readFile(new URL(import.meta.url)); // file I/O runs on the pool
  await new Promise<void>((ok, fail) => dns.lookup("localhost", (err) => (err ? fail(err) : ok()))); // so does getaddrinfo
  assert.equal(settled, 0, "the slow lookups were still waiting meanwhile");
  for (const err of await Promise.all(slow)) {
    // DNS that does not answer is transient (a "connection" failure, retried), never the
    // permanent "dns" class that pauses a destination at once.
    assert.equal(err.code, "EAI_AGAIN");
    assert.equal(classifyError(err), "connection");
    assert.match(err.message, /slow\.test did not complete \(ETIMEOUT\)/);
  }
});

test("one family answered: the other is waited for a moment, not its whole timeout", async () => {
  const resolve = resolver({ timeoutMs: 60_000 });
  const started = Date.now();
  assert.deepEqual(await resolve("v4only.test"), [{ address: "127.0.0.1", family: 4 }]);
  // The AAAA question is never answered; its 60 s timeout must not be what ends the lookup.
  assert.ok(Date.now() - started < 10_000, `${Date.now() - started} ms`);
});

test("a name DNS does not have: ENOTFOUND, and the system is not asked under the public-only policy", async () => {
  let asked = 0;
  const resolve = resolver({ systemLookup: () => void asked++ });
  await assert.rejects(resolve("missing.test"), (err: NodeJS.ErrnoException) => {
    assert.equal(err.code, "ENOTFOUND");
    assert.equal(classifyError(err), "dns");
    return true;
  });
  assert.equal(asked, 0);
});

test("with private networks admitted, the system is asked for names DNS lacks: once per name, two names at most at once", async () => {
  const calls: { name: string; answer: Answer }[] = [];
  const systemLookup: SystemLookup = (name, _options, answer) => void calls.push({ name, answer });
  const resolve = resolver({ systemFallback: true, systemLookup });
  const a = Array.from({ length: 10 }, () => resolve("hosts-a.test"));
  const b = resolve("hosts-b.test");
  const c = resolve("hosts-c.test");
  const waitCalls = async (n: number) => {
    for (let i = 0; i < 200 && calls.length < n; i++) await new Promise((r) => setTimeout(r, 10));
  };
  await waitCalls(SYSTEM_LOOKUPS);
  await new Promise((r) => setTimeout(r, 100)); // time for a third call, were one to start
  assert.deepEqual(
    calls.map((x) => x.name),
    ["hosts-a.test", "hosts-b.test"],
  );
  const answer: LookupAddress[] = [{ address: "10.1.2.3", family: 4 }];
  calls[0]!.answer(null, answer);
  for (const got of await Promise.all(a)) assert.deepEqual(got, answer);
  await waitCalls(3);
  assert.deepEqual(
    calls.map((x) => x.name),
    ["hosts-a.test", "hosts-b.test", "hosts-c.test"],
  );
  calls[1]!.answer(Object.assign(new Error("getaddrinfo ENOTFOUND hosts-b.test"), { code: "ENOTFOUND" }), []);
  calls[2]!.answer(null, answer);
  await assert.rejects(b, { code: "ENOTFOUND" });
  assert.deepEqual(await c, answer);
  // The answer was passed on, not kept: a later lookup asks again.
  const again = resolve("hosts-a.test");
  await waitCalls(4);
  calls[3]!.answer(null, answer);
  assert.deepEqual(await again, answer);
});

test("localhost names are loopback by definition: no nameserver is asked", async () => {
  const before = stub.queries.length;
  assert.deepEqual(await resolver()("api.localhost"), [
    { address: "127.0.0.1", family: 4 },
    { address: "::1", family: 6 },
  ]);
  assert.equal(stub.queries.length, before);
});

test("the sender delivers to a name resolved by SLUICE_DNS_SERVERS's nameserver", async () => {
  const server = http.createServer((req, res) => req.resume().on("end", () => res.end("ok")));
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const sender = new Sender({
    network: { allowPrivateNetworks: true, allowedCidrs: [] },
    userAgent: "Sluice-test/1.0",
    dnsServers: [stub.server],
  });
  try {
    const { port } = server.address() as AddressInfo;
    const result = await sender.send({ url: `http://fast.test:${port}/hook`, body: "{}", headers: {}, timeoutMs: 5000 });
    assert.equal(result.statusCode, 200, JSON.stringify(result));
  } finally {
    await sender.close();
    server.close();
  }
});
