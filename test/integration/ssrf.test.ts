import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startSluice, type ApiAnswer, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import type { ApiError, Attempt, Delivery, Destination, Event, EventAccepted, Page, ValidationFailed } from "../helpers/api-types.js";

// The SSRF guard through the whole engine. A URL whose host is refused without any DNS lookup (an
// IP literal in any spelling, `localhost`) is refused at create/PATCH with 422; a host that turns
// out refused at send time pauses its destination at once (cause permanent, never probed) and
// holds the delivery instead of retrying it for a day. No spelling reaches the receiver.

const HINT = /which this Sluice does not deliver to; set SLUICE_ALLOW_PRIVATE_NETWORKS=1 or add it to SLUICE_ALLOWED_CIDRS/;

/** Every spelling of loopback, and the message class each must be refused with. */
function spellings(port: number): [string, RegExp][] {
  return [
    [`http://127.0.0.1:${port}/a`, /^127\.0\.0\.1 is a loopback address.*\(e\.g\. 127\.0\.0\.0\/8\)/],
    [`http://127.1:${port}/b`, /^127\.0\.0\.1 is a loopback address/],
    [`http://0x7f000001:${port}/c`, /^127\.0\.0\.1 is a loopback address/],
    [`http://2130706433:${port}/d`, /^127\.0\.0\.1 is a loopback address/],
    [`http://0177.0.0.1:${port}/e`, /^127\.0\.0\.1 is a loopback address/],
    [`http://[::ffff:127.0.0.1]:${port}/f`, /loopback address 127\.0\.0\.1/],
    [`http://localhost:${port}/g`, /^localhost is a loopback name/],
    [`http://[::1]:${port}/h`, /^\[::1\] is a loopback address/],
    [`http://0.0.0.0:${port}/i`, /^0\.0\.0\.0 is an unspecified address/],
  ];
}

const OTHER_REFUSED: [string, RegExp][] = [
  ["http://10.1.2.3/hook", /^10\.1\.2\.3 is a private-network address/],
  ["http://192.168.0.10:8080/hook", /^192\.168\.0\.10 is a private-network address/],
  ["http://169.254.169.254/latest/meta-data/", /^169\.254\.169\.254 is a link-local address \(the cloud metadata service\)/],
  ["https://hooks.localhost/x", /^hooks\.localhost is a loopback name/],
];

function assertRefused(r: ApiAnswer<ValidationFailed>, message: RegExp, url: string): void {
  assert.equal(r.status, 422, `${url}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error.code, "SLUICE_VALIDATION_FAILED");
  assert.equal(r.body.error.details.length, 1, JSON.stringify(r.body));
  assert.equal(r.body.error.details[0]!.field, "url");
  assert.match(r.body.error.details[0]!.message, message, url);
  assert.match(r.body.error.details[0]!.message, HINT, url);
  assert.match(r.body.error.message, /^Invalid destination: url .*SLUICE_ALLOW_PRIVATE_NETWORKS=1/);
}

describe("SSRF guard at create and PATCH", () => {
  let s: TestSluice;
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver();
    s = await startSluice("embedded", { env: { SLUICE_ALLOW_PRIVATE_NETWORKS: "0" } });
  });
  after(async () => {
    await s?.stop();
    await rx?.close();
  });

  test("a refused literal or localhost is a 422 naming the address class and the setting, and writes nothing", async () => {
    for (const [url, message] of [...spellings(rx.port), ...OTHER_REFUSED]) {
      assertRefused(await s.api<ValidationFailed>("POST", "/v1/destinations", { url, event_types: ["ssrf.*"] }), message, url);
    }
    assert.deepEqual((await s.api<Page<Destination>>("GET", "/v1/destinations")).body.data, []);
    // Every problem is reported at once, the address beside the others.
    const both = await s.api<ValidationFailed>("POST", "/v1/destinations", { url: "http://127.0.0.1/x", rate_limit: {} });
    assert.equal(both.status, 422);
    assert.deepEqual(both.body.error.details.map((d) => d.field).sort(), ["rate_limit", "url"]);
  });

  test("PATCH to a refused literal is a 422 and leaves the destination as it was", async () => {
    // An ordinary name is not resolved at create time (DNS may answer differently at send time).
    const d = (await s.api<Destination>("POST", "/v1/destinations", { url: "https://hooks.example.com/in", event_types: ["never.sent"] }))
      .body;
    assert.ok(d.id, JSON.stringify(d));
    for (const [url, message] of [...spellings(rx.port), ...OTHER_REFUSED]) {
      assertRefused(await s.api<ValidationFailed>("PATCH", `/v1/destinations/${d.id}`, { url, name: "changed" }), message, url);
    }
    const after = (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body;
    assert.equal(after.url, "https://hooks.example.com/in");
    assert.equal(after.name, "");
    // A PATCH that does not touch the URL is judged on what it changes.
    assert.equal((await s.api("PATCH", `/v1/destinations/${d.id}`, { name: "ok" })).status, 200);
    assert.equal(rx.received.length, 0);
  });

  test("SLUICE_ALLOW_PRIVATE_NETWORKS=1 accepts them all", async () => {
    const open = await startSluice("embedded", { env: { SLUICE_ALLOW_PRIVATE_NETWORKS: "1" } });
    try {
      for (const [url] of [...spellings(rx.port), ...OTHER_REFUSED]) {
        const r = await open.api<Destination>("POST", "/v1/destinations", { url, event_types: ["never.sent"] });
        assert.equal(r.status, 201, `${url}: ${JSON.stringify(r.body)}`);
        const p = await open.api<Destination | ApiError>("PATCH", `/v1/destinations/${r.body.id}`, { url });
        assert.equal(p.status, 200, `${url}: ${JSON.stringify(p.body)}`);
      }
    } finally {
      await open.stop();
    }
  });

  test("SLUICE_ALLOWED_CIDRS lets exactly that range through, at create and at send", async () => {
    const allowed = await startSluice("embedded", { env: { SLUICE_ALLOW_PRIVATE_NETWORKS: "0", SLUICE_ALLOWED_CIDRS: "127.0.0.0/8" } });
    try {
      assertRefused(
        await allowed.api<ValidationFailed>("POST", "/v1/destinations", { url: "http://10.0.0.1/x" }),
        /private-network/,
        "10.0.0.1",
      );
      assertRefused(
        await allowed.api<ValidationFailed>("POST", "/v1/destinations", { url: `http://[::1]:${rx.port}/x` }),
        /loopback/,
        "[::1]",
      );
      assert.equal(
        (await allowed.api("POST", "/v1/destinations", { url: `http://localhost:${rx.port}/x`, event_types: ["never.sent"] })).status,
        201,
      );
      const ok = await allowed.api<Destination | ApiError>("POST", "/v1/destinations", {
        url: `http://127.0.0.1:${rx.port}/ok`,
        event_types: ["cidr.*"],
      });
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      await allowed.api("POST", "/v1/events", { type: "cidr.ok", payload: {} });
      await rx.waitForCount(1);
      assert.equal(rx.received[0]!.path, "/ok");
    } finally {
      await allowed.stop();
      rx.reset();
    }
  });
});

describe("SSRF guard at send time", () => {
  // The API of one process allows private networks, the worker of another refuses them, on one
  // server database: the URLs are accepted, and only the connection is refused — as when a name
  // resolves to a refused address, or when the settings of API and workers differ.
  let api: TestSluice;
  let worker: TestSluice | null = null;
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver();
    api = await startSluice("server", { api: true, worker: false, env: { SLUICE_ALLOW_PRIVATE_NETWORKS: "1" } });
    worker = await startSluice("server", {
      api: false,
      worker: true,
      databaseUrl: api.databaseUrl,
      env: { SLUICE_ALLOW_PRIVATE_NETWORKS: "0" },
    });
  });
  after(async () => {
    await worker?.stop();
    await api?.stop();
    await rx?.close();
  });

  test("a refused address pauses the destination after one attempt, permanent, and holds the delivery", async () => {
    const urls = spellings(rx.port).map(([url]) => url);
    const dests: string[] = [];
    for (const url of urls) {
      // The default retry schedule: ten retries over a day, none of which may be spent.
      const r = await api.api<Destination>("POST", "/v1/destinations", { url, event_types: ["ssrf.*"] });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      dests.push(r.body.id);
    }
    const ev = await api.api<EventAccepted>("POST", "/v1/events", { type: "ssrf.probe", payload: {} });
    assert.equal(ev.body.deliveries, urls.length);
    const destinations = async () =>
      Promise.all(dests.map(async (id) => (await api.api<Destination>("GET", `/v1/destinations/${id}`)).body));
    await waitFor(async () => (await destinations()).every((d) => d.status === "paused"), {
      message: "not every blocked destination paused",
    });

    for (const d of await destinations()) {
      assert.match(
        d.pause_reason ?? "",
        /^auto: refused to connect to .*which this Sluice does not deliver to\. Set SLUICE_ALLOW_PRIVATE_NETWORKS=1 or add it to SLUICE_ALLOWED_CIDRS .*then resume the destination$/,
        d.url,
      );
      assert.equal(d.next_probe_at, null, `${d.url}: a blocked pause is never probed`);
    }
    const localhost = (await destinations())[urls.findIndex((u) => u.includes("localhost"))]!;
    assert.match(localhost.pause_reason ?? "", /refused to connect to localhost \((127\.0\.0\.1|::1)\): a loopback address/);

    const e = (await api.api<Event>("GET", `/v1/events/${ev.body.id}`)).body;
    for (const dl of e.deliveries!) {
      const delivery = (await api.api<Delivery>("GET", `/v1/deliveries/${dl.id}`)).body;
      assert.equal(delivery.status, "held", JSON.stringify(delivery));
      assert.equal(delivery.hold_reason, "paused");
      assert.match(delivery.last_error ?? "", /^blocked: Refused to connect/);
      const attempts = (await api.api<Page<Attempt>>("GET", `/v1/deliveries/${dl.id}/attempts`)).body.data;
      assert.equal(attempts.length, 1, `${dl.destination_id}: ${JSON.stringify(attempts)}`);
      assert.equal(attempts[0]!.error_class, "blocked");
    }

    const rows = await api.running.db.query<{ id: string; pause_cause: string; next_probe_at: Date | null }>(
      "SELECT id, pause_cause, next_probe_at FROM destinations WHERE id = ANY($1::text[])",
      [dests],
    );
    assert.ok(
      rows.length === dests.length && rows.every((r) => r.pause_cause === "permanent" && r.next_probe_at === null),
      JSON.stringify(rows),
    );
    // One destination.paused alert each, as for any automatic pause.
    const alerts = await api.running.db.query<{ destination_id: string; reason: string }>(
      "SELECT destination_id, payload->>'reason' AS reason FROM alerts WHERE type = 'destination.paused' AND destination_id = ANY($1::text[])",
      [dests],
    );
    assert.deepEqual(alerts.map((a) => a.destination_id).sort(), [...dests].sort());
    assert.ok(
      alerts.every((a) => /^auto: refused to connect to /.test(a.reason)),
      JSON.stringify(alerts),
    );
    assert.equal(rx.received.length, 0);

    // Once the policy allows the address, resuming delivers what was held.
    await worker!.stop();
    worker = await startSluice("server", {
      api: false,
      worker: true,
      databaseUrl: api.databaseUrl,
      env: { SLUICE_ALLOW_PRIVATE_NETWORKS: "1" },
    });
    const first = dests[0]!;
    const resumed = await api.api<Destination | ApiError>("POST", `/v1/destinations/${first}/resume`, {});
    assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
    await rx.waitForCount(1);
    assert.equal(rx.received[0]!.path, "/a");
    const dl = e.deliveries!.find((x) => x.destination_id === first)!;
    await waitFor(async () => (await api.api<Delivery>("GET", `/v1/deliveries/${dl.id}`)).body.status === "delivered", {
      message: "the resumed delivery was not delivered",
    });
    assert.equal((await api.api<Page<Attempt>>("GET", `/v1/deliveries/${dl.id}/attempts`)).body.data.length, 2);
  });
});
