import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { useSluiceAndReceiver } from "../helpers/sluice.js";
import type { Destination } from "../helpers/api-types.js";
import type { ReceivedRequest, Reply } from "../helpers/receiver.js";

// Adaptive pace against receivers with a capacity Sluice is not told: the engine, a real
// Postgres and real HTTP. The controller's own properties are in test/unit/adaptive-pace.test.ts.

/** Answers 429 (no Retry-After) when this request would be more than `cap(t)` accepted in the last second. */
function limit429(cap: (t: number) => number, rejected: Set<number>): (r: ReceivedRequest) => Reply {
  const accepted: number[] = [];
  return (r) => {
    while (accepted.length && accepted[0]! <= r.receivedAt - 1000) accepted.shift();
    if (accepted.length >= cap(r.receivedAt)) {
      rejected.add(r.seq);
      return { status: 429 };
    }
    accepted.push(r.receivedAt);
    return { status: 200 };
  };
}

/** One FIFO server taking 1/N s per request: past N/s its queue, and so its latency, grows. */
function knee(perSecond: number, baseMs: number): (r: ReceivedRequest) => Reply {
  let free = 0;
  return (r) => {
    free = Math.max(r.receivedAt, free) + 1000 / perSecond;
    return { status: 200, delayMs: free - r.receivedAt + baseMs };
  };
}

const inWindow = (rs: ReceivedRequest[], from: number, to: number) => rs.filter((r) => r.receivedAt >= from && r.receivedAt < to);

describe("adaptive pace on server Postgres", () => {
  const ctx = useSluiceAndReceiver("server");

  test("bad adaptive config is refused with a field and a fix, and writes nothing", async () => {
    const { s, rx } = ctx;
    const bad = await s.api<{ error: { code: string; details: { field: string; message: string }[] } }>("POST", "/v1/destinations", {
      url: `${rx.url}/bad`,
      adaptive: { enabled: true, min_per_second: 50, max_per_second: 10 },
    });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.error.code, "SLUICE_VALIDATION_FAILED");
    assert.equal(bad.body.error.details[0]!.field, "adaptive.min_per_second");
    assert.match(bad.body.error.details[0]!.message, /raise max_per_second/);
    const list = await s.api<{ data: Destination[] }>("GET", "/v1/destinations");
    assert.equal(list.body.data.filter((d) => d.url === `${rx.url}/bad`).length, 0);
    const unknown = await s.api("POST", "/v1/destinations", { url: `${rx.url}/bad`, adaptive: { enabled: true, max_rps: 3 } });
    assert.equal(unknown.status, 422);
  });

  test("fixed limits, adaptive off: the effective pace is the configured one; turning it on starts at 10/s within the bounds", async () => {
    const { s, rx } = ctx;
    const d = (
      await s.api<Destination>("POST", "/v1/destinations", {
        url: `${rx.url}/fixed`,
        max_concurrency: 7,
        rate_limit: { max_per_minute: 120 },
      })
    ).body;
    assert.deepEqual([d.adaptive, d.effective_rate_per_second, d.effective_concurrency, d.pace_reason], [null, 2, 7, null]);
    const on = (await s.api<Destination>("PATCH", `/v1/destinations/${d.id}`, { adaptive: { enabled: true } })).body;
    // The fixed rate_limit (2/s) still bounds it.
    assert.deepEqual([on.effective_rate_per_second, on.pace_reason], [2, "adaptive pace starts at 2/s"]);
    const wider = (await s.api<Destination>("PATCH", `/v1/destinations/${d.id}`, { rate_limit: null })).body;
    assert.equal(wider.effective_rate_per_second, 10);
    assert.ok(wider.effective_concurrency >= 1 && wider.effective_concurrency <= 7);
  });

  test("hidden capacity: 429 above N/s, latency past a knee, capacity falling mid-run — each found, none hammered", async (t) => {
    const { s, rx } = ctx;
    rx.reset();
    const N = 40;
    const t0 = Date.now();
    const SHIFT_AT = t0 + 9000;
    const rejected = new Set<number>();
    const respond: Record<string, (r: ReceivedRequest) => Reply> = {
      "/cap": limit429(() => N, rejected),
      "/knee": knee(N, 5),
      "/shift": limit429((t) => (t < SHIFT_AT ? 60 : 20), rejected),
    };
    rx.respondWith((r) => respond[r.path]!(r));
    const ids: Record<string, string> = {};
    for (const path of Object.keys(respond)) {
      const d = await s.api<Destination>("POST", "/v1/destinations", {
        url: `${rx.url}${path}`,
        event_types: [`ap${path.slice(1)}.*`],
        max_concurrency: 50,
        timeout_seconds: 10,
        adaptive: { enabled: true, max_per_second: 500 },
      });
      assert.equal(d.status, 201, JSON.stringify(d.body));
      ids[path] = d.body.id;
    }
    // A backlog for the whole run: more than any of them can take in it.
    for (const path of Object.keys(respond)) {
      const type = `ap${path.slice(1)}.x`;
      for (let b = 0; b < 2; b++) {
        const pub = await s.api("POST", "/v1/events/batch", {
          events: Array.from({ length: 1000 }, (_, i) => ({ type, payload: { i } })),
        });
        assert.equal(pub.status, 202);
      }
    }
    const RUN_MS = 20_000;
    await new Promise((r) => setTimeout(r, RUN_MS - (Date.now() - t0)));
    const end = Date.now();
    const from = end - 8000; // "once converged": the last 8 s
    const views = Object.fromEntries(
      await Promise.all(
        Object.entries(ids).map(async ([p, id]) => [p, (await s.api<Destination>("GET", `/v1/destinations/${id}`)).body] as const),
      ),
    );
    const at = (path: string) => inWindow(rx.received, from, end).filter((r) => r.path === path);
    const fig = (path: string) => {
      const rs = at(path);
      const secs = (end - from) / 1000;
      return { sentPerSecond: rs.length / secs, okPerSecond: rs.filter((r) => !rejected.has(r.seq)).length / secs };
    };
    const report = JSON.stringify(
      Object.fromEntries(
        Object.keys(respond).map((p) => [
          p,
          { ...fig(p), rate: views[p]!.effective_rate_per_second, conc: views[p]!.effective_concurrency, why: views[p]!.pace_reason },
        ]),
      ),
    );

    t.diagnostic(`last 8 s: ${report}`);

    // Checked here: what a busy machine cannot make false: never over a capacity, never held, the
    // 429s reaching the controller. Not checked here: how much of each capacity is used once
    // converged (at least 0.6 N at /cap and at /shift after its fall, 0.5 N at the knee). That
    // counts the requests this machine manages to make in 20 s, and with both cores of a 2-core
    // machine busy /cap has used 25.4, 23.9 and 6.9 of its 40/s. It is checked on a virtual clock
    // with these receivers, bounds, run and window: "the integration's hidden capacities, found
    // within its 20 s" in test/unit/adaptive-pace.test.ts.

    // 429 above N: once converged it is sent fewer than N a second, never held for minutes.
    const cap = fig("/cap");
    assert.ok(cap.sentPerSecond < N, `sent ${cap.sentPerSecond}/s to a receiver that takes ${N}/s: ${report}`);
    assert.notEqual(views["/cap"]!.status, "throttled", "adaptive pace cuts the pace instead of holding the destination");
    assert.ok(views["/cap"]!.effective_rate_per_second! < N * 1.1, report);
    assert.match(views["/cap"]!.pace_reason ?? "", /pace (cut|raised)/);

    // Knee: the pace settles at or below the knee instead of queueing at the receiver without bound.
    const kneeRs = at("/knee");
    assert.ok(kneeRs.length / 8 <= 1.1 * N, `knee: ${kneeRs.length / 8}/s: ${report}`);

    // Capacity falling from 60/s to 20/s: found within seconds, then under it.
    const shift = fig("/shift");
    assert.ok(shift.sentPerSecond < 20 * 1.15, `after the fall to 20/s: sent ${shift.sentPerSecond}/s: ${report}`);

    // Every attempt is recorded, 429s included, and the pace is in the metrics.
    const metrics = (await s.api<string>("GET", "/metrics", undefined, { key: null })).body;
    assert.match(metrics, /sluice_pace_changes_total\{direction="down",cause="429"\} [1-9]/);
  });
});
