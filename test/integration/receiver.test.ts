// The receiver simulator and waitFor are what every delivery test stands on, so they get tests of
// their own.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { hang, rateLimited, sequence, slow, startReceiver, status, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";

describe("receiver simulator", () => {
  let receiver: Receiver;
  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
  });
  beforeEach(() => {
    receiver.respondWith({ status: 200 });
    receiver.reset();
  });

  it("records method, path, headers, body and parsed JSON in arrival order", async () => {
    const first = await fetch(`${receiver.url}/hooks/a?x=1`, {
      method: "POST",
      headers: { "content-type": "application/json", "webhook-id": "msg_1" },
      body: JSON.stringify({ type: "order.paid", n: 1 }),
    });
    assert.equal(first.status, 200);
    await first.arrayBuffer();
    const second = await fetch(`${receiver.url}/hooks/b`, { method: "POST", body: "not json" });
    await second.arrayBuffer();

    assert.equal(receiver.received.length, 2);
    const [a, b] = receiver.received;
    assert.ok(a && b);
    assert.equal(a.method, "POST");
    assert.equal(a.path, "/hooks/a?x=1");
    assert.equal(a.headers["webhook-id"], "msg_1");
    assert.equal(a.headers["content-type"], "application/json");
    assert.deepEqual(a.json, { type: "order.paid", n: 1 });
    assert.equal(b.body, "not json");
    assert.equal(b.json, undefined);
    assert.equal(b.seq, a.seq + 1);
    assert.ok(b.receivedAt >= a.receivedAt);
    assert.equal(receiver.countByPath("/hooks/b"), 1);
    assert.equal(receiver.countByPath("/hooks/none"), 0);
    assert.equal(receiver.countByPath(), 2);
  });

  it("answers with a fixed reply's status, headers and body", async () => {
    receiver.respondWith({ status: 410, headers: { "x-reason": "gone" }, body: "endpoint removed" });
    const res = await fetch(receiver.url, { method: "POST", body: "{}" });
    assert.equal(res.status, 410);
    assert.equal(res.headers.get("x-reason"), "gone");
    assert.equal(await res.text(), "endpoint removed");
  });

  it("sequence() answers the nth request with the nth reply, then repeats the last", async () => {
    receiver.respondWith(sequence({ status: 503 }, status(429, { "retry-after": "7" }), { status: 204 }));
    const seen: Array<[number, string | null]> = [];
    for (let i = 0; i < 5; i++) {
      const res = await fetch(receiver.url, { method: "POST", body: String(i) });
      await res.arrayBuffer();
      seen.push([res.status, res.headers.get("retry-after")]);
    }
    assert.deepEqual(seen, [
      [503, null],
      [429, "7"],
      [204, null],
      [204, null],
      [204, null],
    ]);
  });

  it("rateLimited() allows maxPerSecond per wall-clock second, then 429 + Retry-After", async () => {
    receiver.respondWith(rateLimited({ maxPerSecond: 3, retryAfterSeconds: 2 }));
    // Start early in a second so the burst most likely fits one window; the checks below hold
    // per window either way.
    await waitFor(() => Date.now() % 1000 < 300, { timeoutMs: 2000 });
    const answers: Array<{ status: number; retryAfter: string | null }> = [];
    for (let i = 0; i < 8; i++) {
      const res = await fetch(receiver.url, { method: "POST", body: "{}" });
      await res.arrayBuffer();
      answers.push({ status: res.status, retryAfter: res.headers.get("retry-after") });
    }

    const byWindow = new Map<number, Array<{ status: number; retryAfter: string | null }>>();
    receiver.received.forEach((req, i) => {
      const w = Math.floor(req.receivedAt / 1000);
      const answer = answers[i];
      assert.ok(answer);
      byWindow.set(w, [...(byWindow.get(w) ?? []), answer]);
    });
    for (const inWindow of byWindow.values()) {
      inWindow.forEach((a, i) => {
        if (i < 3) assert.deepEqual(a, { status: 200, retryAfter: null });
        else assert.deepEqual(a, { status: 429, retryAfter: "2" });
      });
    }
    assert.ok(
      answers.some((a) => a.status === 429),
      "8 quick requests must exceed 3 per second somewhere",
    );
  });

  it("slow() delays the answer", async () => {
    receiver.respondWith(slow(100));
    const started = Date.now();
    const res = await fetch(receiver.url, { method: "POST", body: "{}" });
    await res.arrayBuffer();
    assert.equal(res.status, 200);
    assert.ok(Date.now() - started >= 90, "answered before the delay");
  });

  it("hang() never answers; the request stays in flight until the client gives up", async () => {
    receiver.respondWith(hang());
    const controller = new AbortController();
    // Settle into a value at once, so the rejection is never briefly unhandled.
    const outcome = fetch(receiver.url, { method: "POST", body: "{}", signal: controller.signal }).then(
      (res) => `answered ${res.status}`,
      (err: unknown) => (err instanceof Error ? err.name : String(err)),
    );
    await receiver.waitForCount(1);
    assert.equal(receiver.inflight, 1);
    controller.abort();
    assert.equal(await outcome, "AbortError");
    await waitFor(() => receiver.inflight === 0, { message: () => `inflight is ${receiver.inflight}` });
  });

  it("counts concurrency: inflight, maxInflight and inflightAtArrival", async () => {
    // Hold every answer until all five have arrived, so they are certainly in flight together.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    receiver.respondWith(async () => {
      await gate;
      return { status: 200 };
    });
    const requests = Array.from({ length: 5 }, (_, i) =>
      fetch(`${receiver.url}/c/${i}`, { method: "POST", body: "{}" }).then((r) => r.arrayBuffer()),
    );
    await receiver.waitForCount(5);
    assert.equal(receiver.inflight, 5);
    release();
    await Promise.all(requests);

    assert.equal(receiver.maxInflight, 5);
    assert.deepEqual(
      receiver.received.map((r) => r.inflightAtArrival).sort((a, b) => a - b),
      [1, 2, 3, 4, 5],
    );
    await waitFor(() => receiver.inflight === 0, { message: () => `inflight is ${receiver.inflight}` });

    receiver.reset();
    assert.equal(receiver.received.length, 0);
    assert.equal(receiver.maxInflight, 0);
  });

  it("a responder that throws becomes a 500, not a crash", async () => {
    receiver.respondWith(() => {
      throw new Error("boom");
    });
    const res = await fetch(receiver.url, { method: "POST", body: "{}" });
    assert.equal(res.status, 500);
    assert.match(await res.text(), /boom/);
  });
});

describe("receiver close()", () => {
  it("ends hanging requests and resolves", async () => {
    const receiver = await startReceiver(hang());
    const outcome = fetch(receiver.url, { method: "POST", body: "{}" }).then(
      (res) => `answered ${res.status}`,
      () => "failed",
    );
    await receiver.waitForCount(1);
    await receiver.close();
    assert.equal(await outcome, "failed");
    await waitFor(() => receiver.inflight === 0, { message: () => `inflight is ${receiver.inflight}` });
  });
});

describe("waitFor", () => {
  it("resolves once the condition holds", async () => {
    let calls = 0;
    await waitFor(() => ++calls >= 3, { intervalMs: 1 });
    assert.equal(calls, 3);
  });

  it("rejects with the message evaluated at timeout", async () => {
    let state = "initial";
    setTimeout(() => (state = "changed"), 10);
    await assert.rejects(
      waitFor(() => false, { timeoutMs: 60, intervalMs: 5, message: () => `state was ${state}` }),
      { message: "state was changed" },
    );
  });

  it("waitForCount reports how many arrived when it times out", async () => {
    const receiver = await startReceiver();
    try {
      await assert.rejects(receiver.waitForCount(1, 50), /expected 1 requests within 50 ms, got 0/);
    } finally {
      await receiver.close();
    }
  });
});
