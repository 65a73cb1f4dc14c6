import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../helpers/otlp-receiver.js";
import { closedPort, spawnSluice, type SluiceProcess } from "../helpers/processes.js";
import { waitFor } from "../helpers/wait-for.js";

// OpenTelemetry traces end to end (docs/tracing.md): real Sluice processes configured only by the
// standard OTEL_* variables, exporting to a real OTLP/HTTP endpoint this test runs, delivering to
// a real receiver that answers 429 with Retry-After first. One process traces, one does not.

const API_KEY = "sk_tracing_test";

interface Running {
  url: string;
  proc: SluiceProcess;
  stop(): Promise<void>;
}

async function startProcess(env: Record<string, string>, drop?: () => Promise<void>): Promise<Running> {
  const port = await closedPort();
  const proc = spawnSluice("start", {
    SLUICE_PORT: String(port),
    SLUICE_API_KEY: API_KEY,
    SLUICE_LOG_LEVEL: "info",
    SLUICE_LOG_FORMAT: "json",
    SLUICE_SHUTDOWN_GRACE_SECONDS: "1",
    // A run's own OTEL_* settings never leak in: each process gets exactly the test's.
    OTEL_TRACES_EXPORTER: "",
    OTEL_EXPORTER_OTLP_ENDPOINT: "",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "",
    ...env,
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    proc.kill("SIGTERM");
    await proc.exited;
    await drop?.();
  };
  try {
    await waitFor(async () => (await fetch(`${url}/healthz`).catch(() => null))?.status === 200, {
      timeoutMs: 90_000,
      intervalMs: 200,
      message: () => `Sluice did not start: ${proc.output().slice(-3000)}`,
    });
  } catch (err) {
    proc.kill("SIGKILL");
    await drop?.();
    throw err;
  }
  return { url, proc, stop };
}

async function call<T>(s: Running, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(s.url + path, {
    method,
    headers: { authorization: `Bearer ${API_KEY}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

/** A 429 with Retry-After: 1 to the first request, 200 after. */
function throttleOnce(rx: Receiver): void {
  let n = 0;
  rx.respondWith(() => (++n === 1 ? { status: 429, headers: { "retry-after": "1" } } : { status: 200 }));
}

function logLines(p: SluiceProcess): Record<string, unknown>[] {
  return p
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

describe("OpenTelemetry traces", () => {
  let otlp: OtlpReceiver;
  let rxOn: Receiver;
  let rxOff: Receiver;
  let on: Running;
  let off: Running;
  let tdb: TestDatabase;

  before(async () => {
    otlp = await startOtlpReceiver();
    rxOn = await startReceiver();
    rxOff = await startReceiver();
    tdb = await createTestDatabase();
    // Both at once: a process takes seconds to start on a busy machine.
    [on, off] = await Promise.all([
      startProcess(
        {
          DATABASE_URL: tdb.url,
          OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
          OTEL_SERVICE_NAME: "sluice-under-test",
          // Export every 100 ms rather than every 5 s.
          OTEL_BSP_SCHEDULE_DELAY: "100",
        },
        () => tdb.drop(),
      ),
      // Tracing explicitly off, though an endpoint is named: nothing may reach it.
      startProcess({ SLUICE_DATA_DIR: "memory://", OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url }),
    ]);
  });

  after(async () => {
    await Promise.all([on?.stop(), off?.stop()]);
    await Promise.all([rxOn?.close(), rxOff?.close(), otlp?.close()]);
  });

  test("a publish joins the caller's trace; each attempt is a span in it, the wait for a 429 explained, the request carrying it on", async () => {
    throttleOnce(rxOn);
    const traceId = hex(16);
    const callerSpan = hex(8);
    const dst = await call<{ id: string }>(on, "POST", "/v1/destinations", { url: rxOn.url + "/hook" });
    const evt = await call<{ id: string }>(
      on,
      "POST",
      "/v1/events",
      { type: "order.created", payload: { n: 1 } },
      { traceparent: `00-${traceId}-${callerSpan}-01`, tracestate: "vendor=abc" },
    );
    await rxOn.waitForCount(2, 20_000);

    const attemptSpans = () => otlp.spans.filter((s) => s.name === "sluice.attempt" && s.traceId === traceId);
    await waitFor(() => attemptSpans().length === 2 && otlp.spans.some((s) => s.name === "sluice.wait"), {
      timeoutMs: 15_000,
      message: () => `spans: ${JSON.stringify(otlp.spans.map((s) => [s.name, s.traceId]))}`,
    });
    const inTrace = otlp.spans.filter((s) => s.traceId === traceId);
    const publish = inTrace.find((s) => s.name === "POST /v1/events");
    assert.ok(publish, "the publish span is in the caller's trace");
    assert.equal(publish.parentSpanId, callerSpan, "a child of the caller's span");
    assert.equal(publish.kind, 2, "a server span");
    assert.equal(publish.attributes["sluice.event_id"], evt.id);
    assert.equal(publish.resource["service.name"], "sluice-under-test", "OTEL_SERVICE_NAME names the service");

    const [first, second] = attemptSpans().sort(
      (a, b) => Number(a.attributes["sluice.attempt"]) - Number(b.attributes["sluice.attempt"]),
    ) as [ReceivedSpan, ReceivedSpan];
    for (const s of [first, second]) {
      assert.equal(s.parentSpanId, publish.spanId, "attempts are children of the publish");
      assert.equal(s.kind, 3, "a client span");
      assert.equal(s.attributes["sluice.destination_id"], dst.id);
      assert.equal(s.attributes["sluice.event_id"], evt.id);
      assert.equal(typeof s.attributes["sluice.latency_ms"], "number");
    }
    assert.equal(first.attributes["sluice.attempt"], 1);
    assert.equal(first.attributes["http.response.status_code"], 429);
    assert.equal(first.attributes["sluice.outcome"], "throttled");
    assert.equal(first.attributes["sluice.outcome_class"], "http_429");
    assert.equal(first.attributes["sluice.retry_after_seconds"], 1);
    assert.equal(second.attributes["sluice.attempt"], 2);
    assert.equal(second.attributes["http.response.status_code"], 200);
    assert.equal(second.attributes["sluice.outcome"], "success");
    // Why the second attempt waited, on the trace: the throttle hold the 429 began.
    assert.deepEqual(second.attributes["sluice.wait.reasons"], ["throttled"]);
    assert.ok(Number(second.attributes["sluice.waited_ms"]) >= 900, `waited ${String(second.attributes["sluice.waited_ms"])} ms`);
    const wait = inTrace.find((s) => s.name === "sluice.wait" && s.attributes["sluice.attempt"] === 2);
    assert.ok(wait, "a wait span for the second attempt");
    assert.equal(wait.parentSpanId, publish.spanId);
    assert.ok(wait.endMs <= second.startMs + 1, "the wait ends as the attempt starts");
    const held = inTrace.find((s) => s.parentSpanId === wait.spanId);
    assert.equal(held?.name, "sluice.wait.throttled");
    assert.equal(held.attributes["sluice.wait.reason"], "throttled");

    // The receiver was sent each attempt's own context, in the caller's trace.
    const sent = rxOn.received.map((r) => [r.headers.traceparent, r.headers.tracestate]);
    assert.deepEqual(sent, [
      [`00-${traceId}-${first.spanId}-01`, "vendor=abc"],
      [`00-${traceId}-${second.spanId}-01`, "vendor=abc"],
    ]);

    // The API and the log lines name the trace.
    const [delivery] = (
      await call<{ data: { id: string; trace_id: string | null }[] }>(on, "GET", `/v1/deliveries?destination_id=${dst.id}`)
    ).data;
    assert.equal(delivery?.trace_id, traceId);
    assert.equal((await call<{ trace_id: string | null }>(on, "GET", `/v1/events/${evt.id}`)).trace_id, traceId);
    await waitFor(() => logLines(on.proc).some((l) => l.msg === "attempt throttled"), { message: () => on.proc.output().slice(-2000) });
    const line = logLines(on.proc).find((l) => l.msg === "attempt throttled")!;
    assert.equal(line.trace_id, traceId);
    assert.equal(line.span_id, first.spanId);
  });

  test("with tracing off nothing is exported, and the delivery still carries the caller's traceparent", async () => {
    throttleOnce(rxOff);
    const traceId = hex(16);
    const traceparent = `00-${traceId}-${hex(8)}-01`;
    const dst = await call<{ id: string }>(off, "POST", "/v1/destinations", { url: rxOff.url + "/hook" });
    await call(off, "POST", "/v1/events", { type: "order.created", payload: { n: 2 } }, { traceparent });
    // A publish without one stores nothing and sends nothing.
    await call(off, "POST", "/v1/events", { type: "order.created", payload: { n: 3 } }, { traceparent: "not-a-traceparent" });
    await rxOff.waitForCount(3, 20_000);
    const byPayload = (n: number) => rxOff.received.filter((r) => (r.json as { data: { n: number } }).data.n === n);
    assert.deepEqual(
      byPayload(2).map((r) => [r.headers.traceparent, r.headers.tracestate]),
      byPayload(2).map(() => [traceparent, undefined]),
      "the caller's context, as it came, on every attempt",
    );
    assert.deepEqual(
      byPayload(3).map((r) => r.headers.traceparent),
      byPayload(3).map(() => undefined),
    );
    const deliveries = (await call<{ data: { trace_id: string | null }[] }>(off, "GET", `/v1/deliveries?destination_id=${dst.id}`)).data;
    assert.deepEqual(deliveries.map((d) => d.trace_id).sort(), [traceId, null].sort());
    await waitFor(() => logLines(off.proc).some((l) => l.msg === "attempt throttled"), { message: () => off.proc.output().slice(-2000) });
    const line = logLines(off.proc).find((l) => l.msg === "attempt throttled")!;
    assert.equal(line.trace_id, traceId, "log lines carry the caller's trace id");
    assert.equal(line.span_id, undefined, "and no span id: no span was made");
    assert.equal(otlp.spans.filter((s) => s.traceId === traceId).length, 0, "the process with OTEL_TRACES_EXPORTER=none exported nothing");
    assert.ok(!logLines(off.proc).some((l) => l.msg === "tracing on"));
  });
});
