import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";

// The SSRF guard through the whole engine: with private networks refused (the default), no
// spelling of a loopback address reaches the receiver; SLUICE_ALLOWED_CIDRS opens exactly that range.

describe("SSRF guard end to end", () => {
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

  test("loopback in any spelling is refused at connect time and the receiver gets nothing", async () => {
    const port = rx.port;
    const spellings = [
      `http://127.0.0.1:${port}/a`, `http://127.1:${port}/b`, `http://0x7f000001:${port}/c`, `http://2130706433:${port}/d`,
      `http://0177.0.0.1:${port}/e`, `http://[::ffff:127.0.0.1]:${port}/f`, `http://localhost:${port}/g`, `http://[::1]:${port}/h`,
      `http://0.0.0.0:${port}/i`,
    ];
    const dests: string[] = [];
    for (const url of spellings) {
      const r = await s.api("POST", "/v1/destinations", { url, retry_schedule_seconds: [], event_types: ["ssrf.*"] });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      dests.push(r.body.id);
    }
    const ev = await s.api("POST", "/v1/events", { type: "ssrf.probe", payload: {} });
    assert.equal(ev.body.deliveries, spellings.length);
    await waitFor(async () => {
      const e = (await s.api("GET", `/v1/events/${ev.body.id}`)).body;
      return e.deliveries.every((d: { status: string }) => d.status === "dead");
    }, { message: "not every blocked delivery died" });
    const e = (await s.api("GET", `/v1/events/${ev.body.id}`)).body;
    for (const d of e.deliveries) {
      const attempts = (await s.api("GET", `/v1/deliveries/${d.id}/attempts`)).body.data;
      assert.equal(attempts[0].error_class, "blocked", `${d.destination_id}: ${JSON.stringify(attempts[0])}`);
    }
    assert.equal(rx.received.length, 0);
  });

  test("SLUICE_ALLOWED_CIDRS lets exactly that range through", async () => {
    const allowed = await startSluice("embedded", { env: { SLUICE_ALLOW_PRIVATE_NETWORKS: "0", SLUICE_ALLOWED_CIDRS: "127.0.0.0/8" } });
    try {
      await allowed.api("POST", "/v1/destinations", { url: `http://127.0.0.1:${rx.port}/ok`, event_types: ["cidr.*"] });
      await allowed.api("POST", "/v1/events", { type: "cidr.ok", payload: {} });
      await rx.waitForCount(1);
      assert.equal(rx.received[0]!.path, "/ok");
    } finally {
      await allowed.stop();
    }
  });
});
