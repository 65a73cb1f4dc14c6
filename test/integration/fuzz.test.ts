import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes, randomInt } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { BACKENDS, type Backend } from "../helpers/sluice.js";
import { createTestDatabase } from "../helpers/db.js";
import { closedPort, spawnSluice } from "../helpers/processes.js";
import { startReceiver, type Receiver, type Reply } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import { FailureLog, HealthWatch, checkServerLog, runFuzz, summarize, truncate, type FuzzResult } from "../helpers/fuzz.js";

// A schema-driven fuzz of the whole API (test/helpers/fuzz.ts) on both stores. Tenant A is
// fuzzed; tenant B, set up beside it, must come out unread and unchanged; /healthz must answer
// within HEALTHZ_BUDGET_MS throughout; deliveries must still flow afterwards.
//
// Sluice runs as a child process, not in this one: a request that spins its event loop would
// otherwise stop the health watch and the test's own timers with it.
//
//   SLUICE_FUZZ_SEED=n         replay a run (the seed is printed); `random` for a new one each run.
//                              Unset: a fixed seed, so that `npm test` sends the same requests
//                              each time and a red run is about the change, not the draw
//   SLUICE_FUZZ_SECONDS=s      fuzzing time per store (default 25)
//   SLUICE_FUZZ_COLLECT=1      record every failure and keep going (restarting Sluice if it stops
//                              answering), then fail listing them all; default: stop at the first
//   SLUICE_FUZZ_CONCURRENCY=n  requests in flight at once (default 4)
//   SLUICE_FUZZ_SKIP=a,b       leave out these mutations, to explore past a failure already known
//
// `npm test` gives a test file 180 s; a longer run needs more, e.g.
//   SLUICE_FUZZ_SECONDS=300 npm test -- test/integration/fuzz.test.ts --test-timeout=1500000

const SEED_SETTING = process.env.SLUICE_FUZZ_SEED ?? "20261127";
const SEED = SEED_SETTING === "random" ? randomInt(2 ** 31) : Number(SEED_SETTING) >>> 0;
const SECONDS = Number(process.env.SLUICE_FUZZ_SECONDS) || 25;
const COLLECT = process.env.SLUICE_FUZZ_COLLECT === "1";
const CONCURRENCY = Number(process.env.SLUICE_FUZZ_CONCURRENCY) || 4;
const SKIP = (process.env.SLUICE_FUZZ_SKIP ?? "").split(",").filter(Boolean);
const ADMIN_KEY = `sk_admin_${randomBytes(12).toString("hex")}`;
const DELIVERY_TIMEOUT_MS = 20_000;
// Each /healthz poll's budget. The watch is there to catch a request that holds Sluice's event loop
// or its store (a runaway parse or regex, a query without a bound). An honest /healthz is one ping
// of the store, queued behind the fuzz's own requests in flight (4 at a time, some of 1 MiB), and
// with both cores of a 2-core machine busy has taken 1.35 s. 2.5 s leaves that room and still
// reports a hold of 2.5 s or more, before the 5 s of silence after which the run stops as
// unresponsive; a shorter hold is no longer told from a busy machine.
const HEALTHZ_BUDGET_MS = 2_500;

interface Answer<T = unknown> {
  status: number;
  body: T;
}

async function call<T = unknown>(url: string, key: string | null, method: string, path: string, body?: unknown): Promise<Answer<T>> {
  const headers: Record<string, string> = {};
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(url + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.status, body: parsed as T };
}

async function must<T>(what: string, p: Promise<Answer<T>>, status: number): Promise<T> {
  const r = await p;
  assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Every id (dst_…, evt_…) in an answer. */
function idsIn(v: unknown, out = new Set<string>()): Set<string> {
  if (typeof v === "string" && /^[a-z]{2,5}_[0-9a-f]{20,40}$/.test(v)) out.add(v);
  else if (Array.isArray(v)) for (const x of v) idsIn(x, out);
  else if (v !== null && typeof v === "object") for (const x of Object.values(v)) idsIn(x, out);
  return out;
}

interface SluiceProc {
  url: string;
  pid: number | undefined;
  log: () => string;
  exited: Promise<number | string>;
  stop: () => Promise<void>;
}

// A Sluice process would outlive this one if nothing stopped it (the runner ends a test file that
// overruns --test-timeout with SIGTERM): stop every one on the way out.
const children = new Set<{ kill(signal: NodeJS.Signals): void }>();
process.once("exit", () => {
  for (const c of children) c.kill("SIGKILL");
});
process.once("SIGTERM", () => process.exit(143));

async function startSluiceProcess(backend: Backend, apiKey: string): Promise<SluiceProc> {
  const store: Record<string, string> = {};
  let drop: (() => Promise<void>) | undefined;
  if (backend === "server") {
    const db = await createTestDatabase();
    store.DATABASE_URL = db.url;
    drop = () => db.drop();
  } else store.SLUICE_DATA_DIR = "memory://";
  const port = await closedPort();
  const p = spawnSluice("start", {
    ...store,
    SLUICE_PORT: String(port),
    SLUICE_API_KEY: apiKey,
    SLUICE_ADMIN_KEY: ADMIN_KEY,
    // Errors only: each 5xx logs its cause, which the report quotes.
    SLUICE_LOG_LEVEL: "error",
    SLUICE_LOG_FORMAT: "json",
    SLUICE_SHUTDOWN_GRACE_SECONDS: "1",
  });
  children.add(p);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    p.kill("SIGKILL");
    await p.exited;
    children.delete(p);
    await drop?.();
  };
  try {
    await waitFor(async () => (await call(url, null, "GET", "/healthz").catch(() => ({ status: 0 }))).status === 200, {
      timeoutMs: 90_000,
      intervalMs: 200,
      message: () => `Sluice (${backend}) did not start: ${p.output().slice(-3000)}`,
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, pid: p.proc.pid, log: () => p.output(), exited: p.exited, stop };
}

/**
 * Which of a process's threads used the CPU over one second (Linux /proc): a JavaScript loop that
 * never yields shows as the main thread at ~100 %, a long query as the embedded store's thread, a
 * deadlock as nothing at all.
 */
async function threadsBusy(pid: number): Promise<string> {
  const sample = () => {
    const out = new Map<string, number>();
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        out.set(tid, Number(fields[11]) + Number(fields[12])); // utime + stime, in clock ticks
      }
    } catch {
      /* not Linux, or the process is gone */
    }
    return out;
  };
  const before = sample();
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const after = sample();
  if (!after.size) return "(its threads could not be read)";
  // Clock ticks are 1/100 s on Linux: ticks over 1 s are percent.
  const use = [...after].map(([tid, t]) => [tid, t - (before.get(tid) ?? t)] as const).sort((x, y) => y[1] - x[1]);
  const main = use.find(([tid]) => tid === String(pid))?.[1] ?? 0;
  const other = use.find(([tid]) => tid !== String(pid));
  return `over 1 s its main thread used ${main} % of a CPU, its busiest other thread (the embedded store's, if any) ${other?.[1] ?? 0} %`;
}

/** The fuzzed tenant's receiver: /s/<status> answers that status, so fuzzed destinations also throttle, fail and pause. */
function fuzzReply(req: { path: string }): Reply {
  const m = /\/s\/(\w+)/.exec(req.path);
  switch (m?.[1]) {
    case "429":
      return { status: 429, headers: { "retry-after": "1" } };
    case "503":
      return { status: 503, headers: { "retry-after": "1" } };
    case "500":
      return { status: 500 };
    case "410":
      return { status: 410 };
    case "slow":
      return { status: 200, delayMs: 2_000 };
    default:
      return { status: 200 };
  }
}

interface TenantB {
  key: string;
  tenantId: string;
  destinationId: string;
  eventId: string;
  deliveryId: string;
  recoveryId: string;
  portalToken: string;
  ids: string[];
  secrets: string[];
  visibleToAdmin: string[];
}

async function setUpA(url: string, key: string, rx: Receiver, refusedUrl: string) {
  const ids = new Set<string>();
  const got = <T>(v: T): T => (idsIn(v, ids), v);
  const tenant = got(await must("A's tenant", call<{ id: string }>(url, key, "GET", "/v1/tenant"), 200));
  // A's own keys are never deleted by the fuzz: without one, every later request would be a 401.
  const keys = await must("A's keys", call<{ data: { id: string }[] }>(url, key, "GET", "/v1/api-keys"), 200);
  const protectedIds = keys.data.map((k) => k.id);
  const destinations = [
    { url: `${rx.url}/fz/setup-1`, event_types: ["order.*"] },
    { url: `${rx.url}/fz/setup-2`, event_types: ["fz.*"], ordered: true, rate_limit: { max_per_second: 5 } },
    { url: `${refusedUrl}/setup-3`, event_types: ["user.*"], retry_schedule_seconds: [1] },
    {
      url: `${rx.url}/fz/setup-4`,
      event_types: ["invoice.*"],
      delivery_schedule: { timezone: "UTC", quiet_start: "00:00", quiet_end: "23:59" },
    },
  ];
  const dsts: string[] = [];
  for (const d of destinations)
    dsts.push(got(await must("A's destination", call<{ id: string }>(url, key, "POST", "/v1/destinations", d), 201)).id);
  for (const type of ["order.created", "fz.a", "user.signup", "invoice.finalized"]) {
    got(await must("A's event", call(url, key, "POST", "/v1/events", { type, payload: { n: 1 } }), 202));
  }
  await rx.waitForCount(2, DELIVERY_TIMEOUT_MS);
  got(await must("A's deliveries", call(url, key, "GET", "/v1/deliveries"), 200));
  got(await must("A's spare key", call(url, key, "POST", "/v1/api-keys", { name: "fuzz spare" }), 201));
  const portal = got(await must("A's portal link", call<{ token: string }>(url, key, "POST", "/v1/portal-sessions", {}), 201));
  const since = new Date(Date.now() - 3_600_000).toISOString();
  got(await must("A's recovery", call(url, key, "POST", `/v1/destinations/${dsts[0]}/recover`, { since }), 202));
  return { key, tenantId: tenant.id, ids: [...ids].filter((id) => !protectedIds.includes(id)), portalTokens: [portal.token], protectedIds };
}

async function setUpB(url: string, rx: Receiver): Promise<TenantB> {
  const tag = randomBytes(6).toString("hex");
  const ids = new Set<string>();
  const got = <T>(v: T): T => (idsIn(v, ids), v);
  const name = `fuzz-b-${tag}`;
  const email = `b-${tag}@example.test`;
  const t = got(
    await must(
      "B's tenant",
      call<{ id: string; api_key: string }>(url, ADMIN_KEY, "POST", "/v1/tenants", { name, alert_email: email }),
      201,
    ),
  );
  const key = t.api_key;
  const destUrl = `${rx.url}/b-${tag}`;
  const dst = got(
    await must(
      "B's destination",
      call<{ id: string; secret: string }>(url, key, "POST", "/v1/destinations", {
        url: destUrl,
        event_types: ["fuzzb.*"],
        name: `b-dest-${tag}`,
      }),
      201,
    ),
  );
  const evt = got(
    await must("B's event", call<{ id: string }>(url, key, "POST", "/v1/events", { type: "fuzzb.created", payload: { b: tag } }), 202),
  );
  await rx.waitForCount(1, DELIVERY_TIMEOUT_MS);
  await waitFor(
    async () => {
      const e = await call<{ deliveries: { status: string }[] }>(url, key, "GET", `/v1/events/${evt.id}`);
      return e.body.deliveries.every((d) => d.status === "delivered");
    },
    { timeoutMs: DELIVERY_TIMEOUT_MS, message: "B's first delivery was not marked delivered" },
  );
  const deliveries = got(await must("B's deliveries", call<{ data: { id: string }[] }>(url, key, "GET", "/v1/deliveries"), 200));
  got(await must("B's keys", call(url, key, "GET", "/v1/api-keys"), 200));
  const portal = got(
    await must("B's portal link", call<{ token: string }>(url, key, "POST", "/v1/portal-sessions", { destination_ids: [dst.id] }), 201),
  );
  const since = new Date(Date.now() - 3_600_000).toISOString();
  const rcv = got(
    await must(
      "B's recovery",
      call<{ id: string }>(url, key, "POST", `/v1/destinations/${dst.id}/recover`, { since, statuses: ["dead"] }),
      202,
    ),
  );
  await waitFor(
    async () => (await call<{ status: string }>(url, key, "GET", `/v1/destinations/${dst.id}/recoveries/${rcv.id}`)).body.status === "done",
    {
      timeoutMs: DELIVERY_TIMEOUT_MS,
      message: "B's recovery did not finish",
    },
  );
  const deliveryId = deliveries.data[0]!.id;
  got(await must("B's attempts", call(url, key, "GET", `/v1/deliveries/${deliveryId}/attempts`), 200));
  return {
    key,
    tenantId: t.id,
    destinationId: dst.id,
    eventId: evt.id,
    deliveryId,
    recoveryId: rcv.id,
    portalToken: portal.token,
    ids: [...ids],
    secrets: [destUrl, dst.secret, key, portal.token, name, email],
    visibleToAdmin: [t.id, name, email],
  };
}

// The health score is a sliding window: it moves as time passes with no attempt at all.
const VOLATILE = new Set(["health"]);

/** What B can read of itself, by path. Fields that move with time alone are left out. */
async function snapshotB(url: string, b: TenantB): Promise<Map<string, string>> {
  const paths = [
    "/v1/tenant",
    "/v1/api-keys",
    "/v1/destinations",
    `/v1/destinations/${b.destinationId}`,
    `/v1/destinations/${b.destinationId}/secret`,
    `/v1/destinations/${b.destinationId}/attempts`,
    `/v1/destinations/${b.destinationId}/recoveries/${b.recoveryId}`,
    "/v1/events",
    `/v1/events/${b.eventId}`,
    "/v1/deliveries",
    `/v1/deliveries/${b.deliveryId}`,
    `/v1/deliveries/${b.deliveryId}/attempts`,
  ];
  const out = new Map<string, string>();
  for (const p of paths) {
    const r = await call(url, b.key, "GET", p);
    out.set(p, `${r.status} ${JSON.stringify(r.body, (k, v: unknown) => (VOLATILE.has(k) ? undefined : v))}`);
  }
  const portal = await call(url, b.portalToken, "GET", "/v1/portal-session");
  out.set("/v1/portal-session (B's portal link)", `${portal.status} ${JSON.stringify(portal.body)}`);
  return out;
}

interface Session {
  result?: FuzzResult;
  stoppedEarly: boolean;
}

/** After the fuzz: B unchanged and sent nothing of A's; fresh events of B's and A's delivered. */
async function checkAfter(
  backend: Backend,
  failures: FailureLog,
  url: string,
  c: { b: TenantB; aKey: string; bReceived: number; before: Map<string, string>; rxB: Receiver; rxFinal: Receiver },
): Promise<void> {
  const { b, aKey, bReceived, before, rxB, rxFinal } = c;
  // B: unchanged, and sent nothing of A's.
  const after = await snapshotB(url, b);
  for (const [p, was] of before) {
    const now = after.get(p)!;
    if (now !== was) {
      failures.add({
        kind: "tenant-b-changed",
        key: `b-changed|${p.replace(/[a-z]{2,5}_[0-9a-f]{20,}/g, "<id>")}`,
        title: `tenant B's GET ${p} changed during the fuzz of tenant A on ${backend}`,
        detail: `before: ${truncate(was, 1500)}\nafter:  ${truncate(now, 1500)}`,
        size: 0,
      });
    }
  }
  const stray = rxB.received.slice(bReceived);
  if (stray.length) {
    failures.add({
      kind: "tenant-b-received",
      key: "b-received",
      title: `B's receiver got ${stray.length} request(s) during the fuzz of tenant A on ${backend}`,
      detail: stray.map((r) => `${r.method} ${r.path} webhook-id ${r.headers["webhook-id"]}: ${truncate(r.body, 300)}`).join("\n"),
      size: 0,
    });
  }

  // Deliveries still flow, for B and for A.
  const evtB = await must(
    "B's final event",
    call<{ id: string }>(url, b.key, "POST", "/v1/events", { type: "fuzzb.final", payload: {} }),
    202,
  );
  const aType = `fuzz.final.${randomBytes(4).toString("hex")}`;
  const dstA = await must(
    "A's final destination",
    call<{ id: string }>(url, aKey, "POST", "/v1/destinations", { url: `${rxFinal.url}/final`, event_types: [aType] }),
    201,
  );
  const evtA = await must(
    "A's final event",
    call<{ id: string }>(url, aKey, "POST", "/v1/events", { type: aType, payload: { final: true }, destination_ids: [dstA.id] }),
    202,
  );
  for (const [who, rx, id] of [
    ["B", rxB, evtB.id],
    ["A", rxFinal, evtA.id],
  ] as const) {
    await waitFor(() => rx.received.some((r) => r.headers["webhook-id"] === id), { timeoutMs: DELIVERY_TIMEOUT_MS }).catch(() =>
      failures.add({
        kind: "stalled",
        key: `stalled|${who}`,
        title: `after the fuzz, ${who}'s fresh event ${id} was not delivered within ${DELIVERY_TIMEOUT_MS / 1000} s on ${backend}`,
        detail: `its receiver got ${rx.received.length} request(s) in all`,
        size: 0,
      }),
    );
  }
}

/** One Sluice, set up, fuzzed for `budgetMs`, then checked. */
async function session(backend: Backend, failures: FailureLog, budgetMs: number): Promise<Session> {
  const aKey = `sk_fuzz_a_${randomBytes(12).toString("hex")}`;
  const rxA = await startReceiver(fuzzReply);
  const rxB = await startReceiver({ status: 200 });
  const rxFinal = await startReceiver({ status: 200 });
  const refusedUrl = `http://127.0.0.1:${await closedPort()}`;
  const s = await startSluiceProcess(backend, aKey);
  const health = new HealthWatch(s.url, failures, backend, 250, HEALTHZ_BUDGET_MS);
  try {
    const spec = await must("the OpenAPI document", call(s.url, null, "GET", "/openapi.json"), 200);
    const b = await setUpB(s.url, rxB);
    const a = await setUpA(s.url, aKey, rxA, refusedUrl);
    const before = await snapshotB(s.url, b);
    const bReceived = rxB.received.length;
    health.start();

    const result = await runFuzz({
      url: s.url,
      doc: spec,
      label: backend,
      seed: SEED,
      durationMs: budgetMs,
      concurrency: CONCURRENCY,
      failures,
      health,
      a,
      adminKey: ADMIN_KEY,
      b: { ids: b.ids, secrets: b.secrets, visibleToAdmin: b.visibleToAdmin },
      receiverUrl: rxA.url,
      refusedUrl,
      caps: { "/v1/destinations": 200 },
      serverLog: s.log,
      exited: s.exited,
      skip: SKIP,
    });
    console.log(summarize(backend, SEED, result));
    console.log(`  /healthz: ${health.polls} polls, slowest 200 after ${health.slowestOkMs} ms (budget ${HEALTHZ_BUDGET_MS} ms)`);
    if (result.unresponsive && s.pid !== undefined) {
      failures.add({
        kind: "unresponsive",
        key: "unresponsive|threads",
        title: `Sluice on ${backend}, stopped answering: ${await threadsBusy(s.pid)}`,
        detail: "(the requests around it are in the unresponsive failure above)",
        size: 0,
      });
    }
    if (result.unresponsive || result.exited) return { result, stoppedEarly: true };

    try {
      await checkAfter(backend, failures, s.url, { b, aKey, bReceived, before, rxB, rxFinal });
    } catch (err) {
      // A check that cannot even be made (a valid request refused, no answer) is a finding too.
      failures.add({
        kind: "post-check",
        key: `post-check|${(err as Error).message.slice(0, 80)}`,
        title: `the checks after the fuzz on ${backend} could not be made: ${(err as Error).message}`,
        detail: (err as Error).stack ?? "",
        size: 0,
      });
    }
    checkServerLog(failures, backend, s.log(), result.logCursor);
    return { result, stoppedEarly: false };
  } finally {
    await health.stop();
    await s.stop();
    await Promise.all([rxA.close(), rxB.close(), rxFinal.close()]);
  }
}

for (const backend of BACKENDS) {
  describe(`API fuzz on ${backend} Postgres`, () => {
    test(
      `every operation of /openapi.json, mutated for ${SECONDS} s: no 5xx, errors in shape, B untouched, /healthz within ${HEALTHZ_BUDGET_MS / 1000} s, deliveries flow`,
      { timeout: SECONDS * 1000 * (COLLECT ? 3 : 1) + 300_000 },
      async () => {
        console.log(
          `fuzz on ${backend}: seed ${SEED} (replay with SLUICE_FUZZ_SEED=${SEED}), ${SECONDS} s${COLLECT ? ", collecting" : ""}`,
        );
        const failures = new FailureLog(COLLECT);
        let budgetMs = SECONDS * 1000;
        let sessions = 0;
        let requests = 0;
        for (;;) {
          sessions++;
          const run = await session(backend, failures, budgetMs);
          requests += run.result?.requests ?? 0;
          budgetMs -= run.result?.elapsedMs ?? budgetMs;
          // In collect mode a Sluice that stopped answering is replaced, and the fuzz goes on.
          if (!COLLECT || !run.stoppedEarly || budgetMs < 3_000) break;
        }
        if (sessions > 1) console.log(`fuzz on ${backend}: ${requests} requests over ${sessions} Sluice processes`);
        if (failures.size) {
          assert.fail(
            `fuzz on ${backend} (seed ${SEED}, SLUICE_FUZZ_SEED=${SEED} to replay) found ${failures.size} problem(s):\n\n${failures.report()}`,
          );
        }
      },
    );
  });
}
