import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { spawnSluice, type SluiceProcess } from "../helpers/processes.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { waitFor } from "../helpers/wait-for.js";
import { DATABASE_GAUGES } from "../../src/metrics.js";
import type { Destination, EventBatchAccepted } from "../helpers/api-types.js";

// /metrics as Prometheus sees it: standard process names, one clean `sluice_` prefix, build info,
// a clean `promtool check metrics`, and the gauges sampled from the database exported by the
// API role only, so a sum() over an api and a worker process does not count the store twice.

const VERSION = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** Runs `promtool check metrics` over `text`: its exit code and everything it printed. */
function promtoolCheck(text: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn("promtool", ["check", "metrics"], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (c) => (out += c));
    p.stderr.on("data", (c) => (out += c));
    p.on("error", (err: NodeJS.ErrnoException) =>
      reject(
        err.code === "ENOENT"
          ? new Error("promtool is not on PATH: run `node scripts/ensure-deps.mjs` (installs Debian's prometheus package)")
          : err,
      ),
    );
    p.on("close", (code) => resolve({ code, out }));
    p.stdin.end(text);
  });
}

interface Exposition {
  /** Family name → its # TYPE. */
  types: Map<string, string>;
  /** Family name → its # HELP text. */
  help: Map<string, string>;
  /** Sample lines (`name{labels} value`). */
  samples: string[];
}

function parse(text: string): Exposition {
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  const samples: string[] = [];
  for (const line of text.split("\n")) {
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    const h = /^# HELP (\S+) ?(.*)$/.exec(line);
    if (t) types.set(t[1]!, t[2]!);
    else if (h) help.set(h[1]!, h[2]!);
    else if (line && !line.startsWith("#")) samples.push(line);
  }
  return { types, help, samples };
}

/** The value of the one sample named exactly `series` (name plus labels as printed), or undefined. */
function value(e: Exposition, series: string): number | undefined {
  const line = e.samples.find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Sum of every sample of family `name` whose labels include `labels` (`outcome="success"`). */
function sum(e: Exposition, name: string, labels = ""): number {
  return e.samples
    .filter((l) => (l.startsWith(`${name} `) || l.startsWith(`${name}{`)) && l.includes(labels))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

async function scrape(url: string): Promise<string> {
  const res = await fetch(url);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** What every Sluice process's /metrics must satisfy, whatever its role. */
async function assertConventional(text: string): Promise<Exposition> {
  const e = parse(text);
  assert.doesNotMatch(text, /sluice_process_/, "default metrics are not prefixed twice");
  for (const name of [
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_start_time_seconds",
    "process_open_fds",
    "nodejs_eventloop_lag_seconds",
    "nodejs_heap_size_used_bytes",
    "nodejs_gc_duration_seconds",
    "nodejs_version_info",
  ])
    assert.ok(e.types.has(name), `standard metric ${name} is exported`);
  for (const [name, type] of e.types) {
    assert.match(name, /^(sluice|process|nodejs)_[a-z0-9_]+$/, `${name}: one clean prefix`);
    assert.ok((e.help.get(name) ?? "").trim().length > 0, `${name} has help text`);
    if (type === "counter") assert.match(name, /_total$/, `counter ${name} ends in _total`);
    else assert.doesNotMatch(name, /_total$/, `${type} ${name} does not end in _total`);
  }
  assert.equal(value(e, `sluice_build_info{version="${VERSION}",node_version="${process.version}"}`), 1, "sluice_build_info");
  assert.equal(e.samples.filter((l) => l.startsWith("sluice_build_info")).length, 1, "one build_info series");
  const lint = await promtoolCheck(text);
  assert.deepEqual(lint, { code: 0, out: "" }, `promtool check metrics:\n${lint.out}`);
  return e;
}

describe("/metrics of `sluice start` on the embedded store", () => {
  let s: TestSluice;
  let ok: Receiver;
  let failing: Receiver;
  before(async () => {
    s = await startSluice("embedded");
    ok = await startReceiver({ status: 200 });
    failing = await startReceiver({ status: 500 });
  });
  after(async () => {
    await s?.stop();
    await ok?.close();
    await failing?.close();
  });

  test("after deliveries: standard names, build info, labelled series and histograms, promtool clean", async () => {
    const good = (await s.api<Destination>("POST", "/v1/destinations", { url: `${ok.url}/ok` })).body;
    const bad = (await s.api<Destination>("POST", "/v1/destinations", { url: `${failing.url}/fail`, retry_schedule_seconds: [3600] })).body;
    const pub = await s.api<EventBatchAccepted>("POST", "/v1/events/batch", {
      events: [
        ...Array.from({ length: 5 }, (_, i) => ({ type: "m.ok", payload: { i }, destination_ids: [good.id] })),
        { type: "m.fail", payload: {}, destination_ids: [bad.id] },
      ],
    });
    assert.equal(pub.status, 202);
    await waitFor(() => ok.received.length === 5 && failing.received.length >= 1, {
      message: () => `ok ${ok.received.length}, failing ${failing.received.length}`,
    });
    // The dispatcher counts an attempt once its result is stored, a moment after the answer.
    let text = "";
    await waitFor(
      async () => {
        text = (await s.api<string>("GET", "/metrics", undefined, { key: null })).body;
        const e = parse(text);
        return sum(e, "sluice_attempts_total", 'outcome="success"') >= 5 && sum(e, "sluice_attempts_total", 'error_class="http_5xx"') >= 1;
      },
      {
        message: () =>
          `attempts not counted yet:\n${text
            .split("\n")
            .filter((l) => l.startsWith("sluice_attempts"))
            .join("\n")}`,
      },
    );
    const e = await assertConventional(text);

    assert.ok(sum(e, "sluice_events_ingested_total") >= 6);
    assert.ok((value(e, 'sluice_deliveries_finished_total{status="delivered"}') ?? 0) >= 5);
    assert.equal(e.types.get("sluice_delivery_latency_seconds"), "histogram");
    assert.ok((value(e, "sluice_delivery_latency_seconds_count") ?? 0) >= 5);
    assert.ok((value(e, 'sluice_delivery_latency_seconds_bucket{le="+Inf"}') ?? 0) >= 5);
    // `start` runs the API: it exports the database gauges, with bounded labels only.
    for (const name of DATABASE_GAUGES) assert.equal(e.types.get(name), "gauge", `${name} exported by start`);
    assert.ok(
      e.samples.some((l) => /^sluice_inflight \d+$/.test(l)),
      "sluice_inflight is one series, no destination label",
    );
    assert.doesNotMatch(text, /destination="/, "no destination ids as labels");
    assert.doesNotMatch(text, /(dst|tnt|evt|dlv)_[0-9A-Za-z]{8,}/, "no ids anywhere in /metrics");
  });
});

describe("/metrics of separate `sluice api` and `sluice worker` processes on a Postgres server", () => {
  let tdb: TestDatabase;
  let rx: Receiver;
  const procs: SluiceProcess[] = [];
  before(async () => {
    tdb = await createTestDatabase();
    rx = await startReceiver({ status: 200 });
  });
  after(async () => {
    for (const p of procs) p.kill("SIGKILL");
    await rx?.close();
    await tdb?.drop();
  });

  /** Starts `command` and waits for its ready line; returns the address in `field` of that line. */
  async function ready(command: "api" | "worker", env: Record<string, string>, field: "url" | "metrics_url"): Promise<string> {
    const p = spawnSluice(command, { DATABASE_URL: tdb.url, SLUICE_API_KEY: "sk_metrics_test", SLUICE_LOG_LEVEL: "info", ...env });
    procs.push(p);
    let at = "";
    await waitFor(
      () => {
        const m = new RegExp(`"${field}":"(http://[^"]+)"`).exec(p.output());
        if (m) at = m[1]!;
        return at !== "";
      },
      { timeoutMs: 60_000, message: () => `sluice ${command} never became ready: ${p.output()}` },
    );
    return at;
  }

  test("both are promtool clean; only the api process exports the database gauges", async () => {
    const apiUrl = await ready("api", { SLUICE_PORT: "0" }, "url");
    const workerMetrics = await ready("worker", { SLUICE_METRICS_PORT: "0" }, "metrics_url");
    const call = async <T>(method: string, path: string, body: unknown): Promise<T> => {
      const res = await fetch(apiUrl + path, {
        method,
        headers: { authorization: "Bearer sk_metrics_test", "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      assert.ok(res.ok, `${method} ${path}: ${res.status}`);
      return (await res.json()) as T;
    };
    const d = await call<Destination>("POST", "/v1/destinations", { url: `${rx.url}/split` });
    await call<EventBatchAccepted>("POST", "/v1/events/batch", {
      events: Array.from({ length: 4 }, (_, i) => ({ type: "m.split", payload: { i }, destination_ids: [d.id] })),
    });
    await rx.waitForCount(4, 15_000);

    let workerText = "";
    await waitFor(
      async () => {
        workerText = await scrape(workerMetrics);
        return sum(parse(workerText), "sluice_attempts_total", 'outcome="success"') >= 4;
      },
      { message: () => `the worker's attempts are not counted:\n${workerText}` },
    );
    const apiText = await scrape(`${apiUrl}/metrics`);
    const api = await assertConventional(apiText);
    const worker = await assertConventional(workerText);

    // Each process counts what it did itself: a sum() over both is right for the counters.
    assert.ok(sum(api, "sluice_events_ingested_total") >= 4);
    assert.equal(sum(worker, "sluice_events_ingested_total"), 0);
    assert.equal(sum(api, "sluice_attempts_total"), 0);
    // The store-wide gauges come from the api process alone.
    for (const name of DATABASE_GAUGES) {
      assert.equal(api.types.get(name), "gauge", `${name} exported by api`);
      assert.ok(!worker.types.has(name), `${name} not exported by worker`);
    }
    assert.equal(value(api, "sluice_inflight"), 0, "nothing in flight once all four are delivered");
    assert.equal(sum(api, "sluice_held") + sum(worker, "sluice_held"), 0);
    assert.equal(sum(api, "sluice_destination_health", 'status="healthy"') + sum(worker, "sluice_destination_health"), 1);
  });
});
