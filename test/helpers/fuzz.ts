// A schema-driven fuzz of the whole HTTP API. Every operation of the served OpenAPI document gets
// requests generated from its schemas (fuzz-gen.ts), most of them then mutated (fuzz-requests.ts,
// with the values of fuzz-values.ts), and every answer is checked: no 5xx, every error in the
// contract's shape, nothing of the other tenant (B) readable or reachable, a body that is not
// JSON refused with 415. A health watch polls /healthz throughout.
//
// Replay: a run is seeded; request n is drawn from seedFor(seed, n) alone, so the same seed draws
// the same operations and mutations in the same order (the ids differ: the server makes them).
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Agent, request } from "undici";
import { checkServerLog, loggedErrors, normalize, truncate, type FailureLog, type HealthWatch } from "./fuzz-failures.js";
import { Generator, Raw, Rng, makeResolver, seedFor, toJsonText, typesOf, type Hint } from "./fuzz-gen.js";
import {
  EVENT_TYPES,
  ID_VARIANTS,
  ODD_ZONES,
  TYPE_PATTERNS,
  ZONES,
  garbageId,
  randomBase64,
  randomHex,
  randomJson,
} from "./fuzz-values.js";
import {
  MUTATION_WEIGHTS,
  mutate,
  opName,
  operationsOf,
  type Draft,
  type MutationContext,
  type Operation,
  type Param,
} from "./fuzz-requests.js";

import { sleep } from "./wait-for.js";

export { opName, operationsOf, type Operation } from "./fuzz-requests.js";
export { FailureLog, HealthWatch, checkServerLog, truncate } from "./fuzz-failures.js";

// ---------------------------------------------------------------------------------------------
// Ids of tenant A seen so far, by prefix (dst, evt, …): path ids that hit real rows.

const ID_RE = /^([a-z]{2,5})_[0-9a-f]{20,40}$/;
const KIND_BY_SEGMENT: Record<string, string> = {
  destinations: "dst",
  events: "evt",
  deliveries: "dlv",
  "api-keys": "key",
  "portal-sessions": "pst",
  recoveries: "rcv",
  tenants: "ten",
};
const KIND_BY_NAME: Record<string, string> = {
  destination: "dst",
  event: "evt",
  delivery: "dlv",
  tenant: "ten",
  recovery: "rcv",
  session: "pst",
  portal_session: "pst",
  key: "key",
  api_key: "key",
};

class IdPools {
  private readonly byKind = new Map<string, string[]>();
  readonly portalTokens: string[] = [];
  constructor(private readonly excluded: Set<string>) {}
  add(id: string): void {
    const m = ID_RE.exec(id);
    if (!m || this.excluded.has(id)) return;
    const list = this.byKind.get(m[1]!) ?? [];
    if (list.includes(id)) return;
    // Full: a newer id takes a random-ish older one's place, so pools keep up with deletes.
    if (list.length < 300) list.push(id);
    else list[parseInt(id.slice(-6), 16) % 300] = id;
    this.byKind.set(m[1]!, list);
  }
  pick(rng: Rng, kind: string | undefined): string | undefined {
    const list = kind ? this.byKind.get(kind) : undefined;
    if (list?.length) return rng.pick(list);
    const all = [...this.byKind.values()].flat();
    return all.length ? rng.pick(all) : undefined;
  }
  /** Every id and portal token in an answer of A's. */
  harvest(v: unknown): void {
    if (typeof v === "string") {
      if (v.startsWith("sp_") && !this.excluded.has(v) && !this.portalTokens.includes(v)) this.portalTokens.push(v);
      else this.add(v);
    } else if (Array.isArray(v)) for (const x of v) this.harvest(x);
    else if (v !== null && typeof v === "object") for (const x of Object.values(v)) this.harvest(x);
  }
}

// ---------------------------------------------------------------------------------------------
// The run.

export interface FuzzOptions {
  url: string;
  doc: unknown;
  /** The store's name, for the report. */
  label: string;
  seed: number;
  durationMs: number;
  concurrency: number;
  failures: FailureLog;
  health: HealthWatch;
  /**
   * The fuzzed tenant: its key and id, ids of its objects and portal tokens to start from, and
   * ids never to use (its own first keys: deleting those would lock the fuzz out).
   */
  a: { key: string; tenantId: string; ids: string[]; portalTokens: string[]; protectedIds: string[] };
  adminKey: string;
  b: {
    ids: string[];
    /** Strings of B's that no answer to A may hold: its URL, secret, key, portal token, name. */
    secrets: string[];
    /** What GET /v1/tenants shows the admin key of every tenant, B included. */
    visibleToAdmin: string[];
  };
  receiverUrl: string;
  refusedUrl: string;
  /** Most successful creations per operation path (POST without path params); default 200. */
  caps?: Record<string, number>;
  /** The Sluice process's log so far: 5xx answers quote the error it logged. */
  serverLog?: () => string;
  /** Resolves when the Sluice process ends. */
  exited?: Promise<unknown>;
  /** Leave out these mutations (SLUICE_FUZZ_SKIP): to explore past a failure already known. */
  skip?: string[];
}

export interface OpStats {
  op: Operation;
  requests: number;
  ok: number;
  /** Answers by status; 0: the connection closed while a large body was still being sent. */
  statuses: Map<number, number>;
}

export interface FuzzResult {
  requests: number;
  elapsedMs: number;
  ops: OpStats[];
  /** /healthz stayed silent for 5 s or more: the run stopped. */
  unresponsive: boolean;
  exited: boolean;
  /** How far into the server log checkServerLog has read. */
  logCursor: number;
}

/** A request as sent. */
interface Wire {
  n: number;
  draft: Draft;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

const REQUEST_TIMEOUT_MS = 20_000;
const UNRESPONSIVE_MS = 5_000;
/** Under the server's limit (SLUICE_MAX_PAYLOAD_BYTES + 64 KiB, 1 MiB + 64 KiB by default). */
const MAX_BODY_BYTES = 1_100_000;
/** Creations a run may make per path before its creates are made invalid; /v1/destinations: see FuzzOptions.caps. */
const DEFAULT_CAPS: Record<string, number> = { "/v1/tenants": 30, "/v1/api-keys": 50, "/v1/events": 3000, "/v1/events/batch": 500 };
/** Codes that say a body was parsed (or parsing was tried): what a body that is not JSON must never get. */
const PARSED_CODES = ["SLUICE_VALIDATION_FAILED", "SLUICE_REQUEST_MALFORMED_JSON", "SLUICE_REQUEST_EMPTY_BODY"];
const WRITE_METHODS = ["POST", "PUT", "PATCH", "DELETE"];

const mediaType = (ct: string | null) => (ct === null ? null : ct.split(";")[0]!.trim().toLowerCase());

function safeDecode(p: string): string {
  try {
    return decodeURIComponent(p);
  } catch {
    return p;
  }
}

/** A number in the body below 1e-300 (but not 0), above 1e15, or not finite: what a hang is often made of. */
function hasExtremeNumber(body: Buffer | undefined): boolean {
  if (!body || body.length > 20_000) return false;
  for (const m of body.toString("latin1").matchAll(/(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g)) {
    const x = Math.abs(Number(m[0]));
    if (!Number.isFinite(x) || x > 1e15 || (x !== 0 && x < 1e-300)) return true;
  }
  return false;
}

export function runFuzz(o: FuzzOptions): Promise<FuzzResult> {
  return new Fuzzer(o).run();
}

class Fuzzer {
  private readonly ops: Operation[];
  private readonly gen: Generator;
  private readonly pools: IdPools;
  private readonly stats: Map<string, OpStats>;
  private readonly caps: Record<string, number>;
  private readonly created = new Map<string, number>();
  private readonly weights: (readonly [string, number])[];
  private readonly receiverPort: string;
  /** B's strings that A itself got accepted into its own data (a failure already): echoes of them are no new leak. */
  private readonly tainted = new Set<string>();
  private readonly inflight = new Map<number, Wire>();
  /** The last requests sent, and the last that changed something: what a hang is traced back to. */
  private readonly recent: Wire[] = [];
  private readonly writes: Wire[] = [];
  private readonly extremes: Wire[] = [];
  private readonly stopper = new AbortController();
  /** Closed while a 5xx is replayed alone: the error Sluice logs then is that request's. */
  private gate: Promise<void> = Promise.resolve();
  private readonly replays = new Map<string, number>();
  private replaying = 0;
  private replayed = 0;
  private readonly agent: Agent;
  private readonly secretNames: [string, string][];
  private readonly bNames: Map<string, string>;

  constructor(private readonly o: FuzzOptions) {
    this.ops = operationsOf(o.doc);
    if (!this.ops.length) throw new Error("fuzz: the OpenAPI document lists no operation");
    const hint: Hint = (name, s, rng) => this.hint(name, s, rng);
    this.gen = new Generator(makeResolver(o.doc), hint, randomJson);
    this.pools = new IdPools(new Set([...o.a.protectedIds, ...o.b.ids, ...o.b.secrets]));
    for (const id of o.a.ids) this.pools.add(id);
    this.pools.portalTokens.push(...o.a.portalTokens);
    this.stats = new Map(this.ops.map((op) => [opName(op), { op, requests: 0, ok: 0, statuses: new Map() }]));
    this.caps = { ...DEFAULT_CAPS, ...o.caps };
    this.weights = MUTATION_WEIGHTS.filter(([name]) => !(o.skip ?? []).includes(name));
    this.receiverPort = new URL(o.receiverUrl).port;
    this.agent = new Agent({ keepAliveTimeout: 10_000, connections: o.concurrency * 2 });
    this.secretNames = [
      [o.a.key, "<A's API key>"],
      [o.adminKey, "<admin key>"],
    ];
    this.bNames = new Map(o.b.ids.map((id) => [id, `${id} (B's)`]));
  }

  async run(): Promise<FuzzResult> {
    const o = this.o;
    o.health.describeInflight = () =>
      [...this.inflight.values()].map((w) => `#${w.n} ${w.method} ${truncate(w.path, 100)} — ${w.draft.labels.join("; ") || "valid"}`);
    let exited = false;
    let finished = false;
    void o.exited?.then((code) => {
      exited = true;
      if (finished || this.stopper.signal.aborted) return;
      o.failures.add({
        kind: "exited",
        key: "exited",
        title: `Sluice on ${o.label} exited (${String(code)}) during the fuzz`,
        detail: `${this.trail()}\n\nits log, last lines:\n${(o.serverLog?.() ?? "").slice(-3000)}`,
        size: 0,
      });
      this.stopper.abort();
    });
    const started = Date.now();
    const deadline = started + o.durationMs;
    let next = 0;
    let unresponsive = false;
    let logCursor = 0;
    let ticks = 0;
    const monitor = setInterval(() => {
      if (this.stopper.signal.aborted) return;
      if (o.serverLog && ++ticks % 10 === 0) logCursor = checkServerLog(o.failures, o.label, o.serverLog(), logCursor);
      if (o.health.silentForMs() >= UNRESPONSIVE_MS) {
        unresponsive = true;
        o.failures.add({
          kind: "unresponsive",
          key: "unresponsive",
          title: `Sluice on ${o.label} stopped answering: no /healthz 200 for ${UNRESPONSIVE_MS / 1000} s`,
          detail: this.trail(),
          size: 0,
        });
        this.stopper.abort();
      } else if (!o.failures.collect && o.failures.size) this.stopper.abort();
    }, 100);
    const worker = async () => {
      while (!this.stopper.signal.aborted && Date.now() < deadline) {
        await this.gate;
        await this.send(this.build(next++));
        if (!o.failures.collect && o.failures.size) this.stopper.abort();
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, worker));
    finished = true;
    clearInterval(monitor);
    if (o.serverLog) logCursor = checkServerLog(o.failures, o.label, o.serverLog(), logCursor);
    await this.agent.close().catch(() => undefined);
    return { requests: next, elapsedMs: Date.now() - started, ops: [...this.stats.values()], unresponsive, exited, logCursor };
  }

  /** What was in flight, sent just before and last changed: where a hang or a crash comes from. */
  private trail(): string {
    const list = (ws: Wire[]) => ws.map((w) => this.describe(w)).join("\n") || "(none)";
    return [
      `in flight:\n${list([...this.inflight.values()])}`,
      `sent just before (oldest first):\n${list(this.recent)}`,
      `the last requests that changed something (2xx, oldest first):\n${list(this.writes)}`,
      `the last accepted with an extreme number in the body (a tiny rate, say; oldest first):\n${list(this.extremes)}`,
    ].join("\n\n");
  }

  // --- values and ids ----------------------------------------------------------------------

  private hint(name: string, s: Parameters<Hint>[1], rng: Rng): ReturnType<Hint> {
    if (!typesOf(s).includes("string")) return undefined;
    if (name === "url" || s.format === "uri") return this.url(rng);
    if (name === "timezone") return rng.pick(rng.chance(0.8) ? ZONES : ODD_ZONES);
    // Now and then the schema's own pattern: whsec_ and characters of base64 that may not decode.
    if (name === "secret") return rng.chance(0.8) ? `whsec_${randomBase64(rng, rng.int(24, 64))}` : undefined;
    if (/(^|_)ids?$/.test(name)) return this.idFor(rng, name, 0.05);
    if (name === "type" && rng.chance(0.8)) return rng.pick(EVENT_TYPES);
    if (["event_types", "applies_to", "bypass_event_types"].includes(name) && rng.chance(0.8)) return rng.pick(TYPE_PATTERNS);
    if (name === "name") return `fuzz ${rng.int(0, 9999)}`;
    return undefined;
  }

  /** Destinations of A's point here: its receiver (answering 200, 429, 5xx, 410 or slowly by path), or a closed port. */
  private url(rng: Rng): string {
    const { receiverUrl, refusedUrl } = this.o;
    return rng.weighted<() => string>([
      [() => `${receiverUrl}/fz/${rng.int(0, 999)}`, 60],
      [() => `${receiverUrl}/s/${rng.pick(["429", "500", "503", "410", "slow"])}`, 15],
      [() => `${refusedUrl}/down`, 10],
      [() => `http://localhost:${this.receiverPort}/fz`, 5],
      [() => `HTTP://127.0.0.1:${this.receiverPort}/%C3%BCn%C3%AF/%F0%9F%98%80?q=1#frag`, 5],
      [() => `https://127.0.0.1:${this.receiverPort}/tls`, 5],
    ])();
  }

  private bId(rng: Rng, kind?: string): string {
    const own = this.o.b.ids.filter((id) => kind !== undefined && id.startsWith(`${kind}_`));
    return rng.pick(own.length ? own : this.o.b.ids);
  }

  /** An id for a field named like destination_ids: mostly A's, with probability pB B's, now and then nobody's. */
  private idFor(rng: Rng, name: string, pB: number): string {
    const kind = KIND_BY_NAME[name.replace(/_ids?$/, "")];
    const r = rng.next();
    if (r < pB) return this.bId(rng, kind);
    if (r < pB + 0.1) return `${kind ?? "dst"}_${randomHex(rng, 27)}`;
    return this.pools.pick(rng, kind) ?? `${kind ?? "dst"}_${randomHex(rng, 27)}`;
  }

  /** A path parameter: mostly a real id of A's of the right kind, else A's of another kind, B's, or garbage; and what it is. */
  private pathId(rng: Rng, op: Operation, name: string, valid: boolean): [string, string] {
    const segs = op.path.split("/");
    const kind = KIND_BY_SEGMENT[segs[segs.indexOf(`{${name}}`) - 1] ?? ""];
    const own = this.pools.pick(rng, kind);
    if (valid) return own ? [own, "A's"] : [garbageId(rng, kind), "garbage"];
    const r = rng.next();
    let id: [string, string];
    if (r < 0.6 && own) id = [own, "A's"];
    else if (r < 0.68 && own) id = [this.pools.pick(rng, undefined)!, "A's, maybe of another kind"];
    else if (r < 0.8) id = [this.bId(rng, kind), "B's"];
    else return [garbageId(rng, kind), "garbage"];
    return rng.chance(0.15) ? [rng.pick(ID_VARIANTS)(id[0]), `${id[1]}, altered`] : id;
  }

  private queryValue(rng: Rng, p: Param): string {
    const v = /(^|_)ids?$/.test(p.name) ? this.idFor(rng, p.name, 0.2) : this.gen.valid(p.schema, rng, p.name);
    return encodeURIComponent(typeof v === "string" ? v : toJsonText(v));
  }

  // --- credentials -------------------------------------------------------------------------

  private credentialFor(op: Operation, rng: Rng, mutated: boolean): string {
    const st = this.stats.get(opName(op))!;
    // Until an operation has answered 2xx once, its plain requests try each credential in turn:
    // admin-only and portal-only operations are reached without being named here.
    if (!mutated && st.ok === 0) return ["a-key", "admin", "a-portal", "a-admin"][st.requests % 4]!;
    const adminish = /admin key/i.test(op.summary);
    const portalish = /portal token/i.test(op.summary);
    return rng.weighted([
      ["a-key", adminish || portalish ? 25 : 72],
      ["a-admin", 8],
      ["admin", adminish ? 50 : 4],
      ["a-portal", portalish ? 50 : 7],
      ["none", 3],
      ["garbage", 3],
      ["tenant-header", 3],
    ]);
  }

  /** Authorization (and Sluice-Tenant) for a credential: A's key, the admin key (for A, or for no tenant), A's portal links, or worse. */
  private applyCredential(d: Draft, rng: Rng): void {
    const { a, adminKey } = this.o;
    delete d.headers.authorization;
    delete d.headers["sluice-tenant"];
    const bearer = (t: string) => (d.headers.authorization = `Bearer ${t}`);
    switch (d.credential) {
      case "a-key":
        bearer(a.key);
        break;
      case "a-admin":
        bearer(adminKey);
        d.headers["sluice-tenant"] = a.tenantId;
        break;
      case "admin":
        bearer(adminKey);
        break;
      case "a-portal":
        bearer(this.pools.portalTokens.length ? rng.pick(this.pools.portalTokens) : a.key);
        break;
      case "none":
        break;
      case "garbage":
        d.headers.authorization = rng.pick([
          "Bearer",
          "Bearer ",
          "Basic Zm9vOmJhcg==",
          `Bearer ${a.key} extra`,
          `bearer ${a.key}`,
          `Bearer ${a.key}\t`,
          `Bearer  ${a.key}`,
          `Bearer sp_${randomHex(rng, 43)}`,
          `Bearer sk_${"x".repeat(5_000)}`,
          "Bearer \u00ff\u00fe",
          `Bearer ${a.key.toUpperCase()}`,
          `Bearer ${a.key.slice(0, -1)}`,
          "Bearer null",
          `Token ${a.key}`,
          `Bearer ${a.key}%00`,
          `Bearer ${adminKey}x`,
        ]);
        break;
      case "tenant-header": {
        // A's key naming B (must be 403), or either key naming no tenant that exists.
        const withAKey = rng.chance(0.7);
        bearer(withAKey ? a.key : adminKey);
        const b = this.bId(rng, "ten");
        d.headers["sluice-tenant"] = rng.pick([
          ...(withAKey ? [b, b, ` ${b} `] : []),
          " ",
          `ten_${"0".repeat(27)}`,
          "x".repeat(1_000),
          `${a.tenantId} `,
          `${a.tenantId}, ${a.tenantId}`,
          "\u00ff",
          "' OR 1=1 --",
        ]);
        break;
      }
    }
  }

  // --- drafting ----------------------------------------------------------------------------

  private context(rng: Rng): MutationContext {
    return {
      gen: this.gen,
      rng,
      idFor: (name, pB) => this.idFor(rng, name, pB),
      applyCredential: (d) => this.applyCredential(d, rng),
      queryValue: (p) => this.queryValue(rng, p),
    };
  }

  /** Request n: the first pass sends each operation one valid request; later ones are mostly mutated. */
  private draft(n: number, rng: Rng): Draft {
    const firstPass = n < this.ops.length;
    const op = firstPass ? this.ops[n]! : rng.pick(this.ops);
    const mutated = !firstPass && rng.chance(0.8);
    const d: Draft = {
      n,
      op,
      method: op.method,
      pathParams: {},
      query: [],
      headers: {},
      body: undefined,
      contentType: null,
      credential: this.credentialFor(op, rng, mutated),
      labels: [],
    };
    for (const p of op.params) {
      if (p.in === "path") {
        const [id, what] = this.pathId(rng, op, p.name, !mutated);
        d.pathParams[p.name] = id;
        if (what !== "A's") d.labels.push(`path ${p.name}: ${what}`);
      } else if (p.in === "query" && (p.required || rng.chance(0.5))) d.query.push([p.name, this.queryValue(rng, p)]);
      else if (p.in === "header" && (p.required || rng.chance(0.3))) {
        const v = this.gen.valid(p.schema, rng, p.name);
        d.headers[p.name] = typeof v === "string" ? v : toJsonText(v);
      }
    }
    if (op.body && (op.body.required || rng.chance(0.8))) {
      d.body = { value: this.gen.valid(op.body.schema, rng) };
      d.contentType = "application/json";
    }
    this.applyCredential(d, rng);
    if (mutated) {
      const count = rng.weighted([
        [1, 50],
        [2, 35],
        [3, 15],
      ]);
      mutate(d, this.context(rng), count, this.weights);
    }
    return d;
  }

  private capKey(d: Draft): string | null {
    return d.method === "POST" && !d.op.path.includes("{") ? d.op.path : null;
  }

  /** Past its cap, a create is made invalid (an unknown field), so that its mutations still run through parsing and validation. */
  private enforceCap(d: Draft): void {
    const key = this.capKey(d);
    if (key === null || (this.created.get(key) ?? 0) < (this.caps[key] ?? 200) || d.bytes) return;
    d.contentType ??= "application/json";
    const v = d.body?.value;
    if (v instanceof Raw) {
      if (v.text.endsWith("}")) d.body = { value: new Raw(`${v.text.slice(0, -1)},"zz_fuzz_capped":true}`, v.label) };
    } else if (v !== null && typeof v === "object" && !Array.isArray(v)) v.zz_fuzz_capped = true;
    else if (v === undefined) d.body = { value: { zz_fuzz_capped: true } };
    d.labels.push("capped: an unknown field keeps it from creating");
  }

  private toWire(d: Draft): Wire {
    const p = d.op.path.replace(/\{([^}]+)\}/g, (_, name: string) => d.pathParams[name] ?? "x");
    const qs = d.query.length ? `?${d.query.map(([k, v]) => (v === null ? k : `${k}=${v}`)).join("&")}` : "";
    const headers = { ...d.headers };
    if (d.contentType !== null) headers["content-type"] = d.contentType;
    const body = d.bytes ?? (d.body ? Buffer.from(toJsonText(d.body.value)) : undefined);
    return { n: d.n, draft: d, method: d.method, path: p + qs, headers, body };
  }

  private build(n: number): Wire {
    const rng = new Rng(seedFor(this.o.seed, n));
    for (let attempt = 0; ; attempt++) {
      const d = this.draft(n, rng);
      this.enforceCap(d);
      const w = this.toWire(d);
      if ((w.body?.length ?? 0) <= MAX_BODY_BYTES || attempt >= 8) return w;
    }
  }

  // --- reporting ---------------------------------------------------------------------------

  /** The request, with keys named instead of shown; `full`: longer, and a big body saved to a file. */
  private describe(w: Wire, full = false): string {
    const seed = this.o.seed;
    let headers = Object.entries(w.headers)
      .map(([k, v]) => `${k}: ${truncate(v, 120)}`)
      .join("\n    ");
    for (const [secret, name] of this.secretNames) headers = headers.split(secret).join(name);
    let body = "(none)";
    if (w.body !== undefined) {
      body = `(${w.body.length} bytes) ${truncate(JSON.stringify(w.body.toString("utf8")).slice(1, -1), full ? 1500 : 400)}`;
      if (full && w.body.length > 1500) {
        const file = path.join(tmpdir(), `sluice-fuzz-${seed}-${w.n}.body`);
        writeFileSync(file, w.body);
        body += `\n    whole body: ${file}`;
      }
    }
    let target = truncate(w.path, 300);
    for (const [id, name] of this.bNames) target = target.split(id).join(name);
    return [
      `request #${w.n} of seed ${seed} (SLUICE_FUZZ_SEED=${seed}), operation ${opName(w.draft.op)}, credential ${w.draft.credential}`,
      `  ${w.method} ${target}`,
      `    ${headers || "(no headers)"}`,
      `    body ${body}`,
      `  mutations: ${w.draft.labels.join("; ") || "(none)"}`,
    ].join("\n");
  }

  // --- checks ------------------------------------------------------------------------------

  private check(w: Wire, status: number, text: string, cause: string | undefined): void {
    const { o } = this;
    const d = w.draft;
    const where = opName(d.op);
    const size = (w.body?.length ?? 0) + w.path.length;
    const fail = (kind: string, key: string, title: string) =>
      o.failures.add(
        {
          kind,
          key,
          title: `${title} on ${o.label}`,
          detail: `${this.describe(w, true)}\n  answer: ${status} ${truncate(text, 500)}`,
          size,
        },
        where,
      );
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    const err = (json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
    const code = typeof err?.code === "string" ? err.code : "-";
    const ok = status >= 200 && status < 300;

    if (status >= 500) {
      fail(
        "server-error",
        `5xx|${status}|${cause ? normalize(cause) : code}`,
        `${status} ${code}${cause ? ` — Sluice logged: ${truncate(cause, 300)}` : ""}`,
      );
    }
    if (status >= 400 && w.method !== "HEAD") {
      const shaped =
        typeof err?.code === "string" && /^SLUICE_[A-Z_]+$/.test(err.code) && typeof err.message === "string" && err.message !== "";
      if (!shaped)
        fail(
          "error-shape",
          `shape|${status}|${normalize(text.slice(0, 60))}`,
          `${status} answered without {"error": {"code": "SLUICE_…", "message"}}`,
        );
    }
    if (ok && status !== 204 && w.method !== "HEAD" && json === undefined) {
      fail("not-json", `not-json|${status}|${where}`, `${status} answered with a body that is not JSON`);
    }

    // Nothing of B's in an answer to A, unless the request itself carried it (an echo in a 404).
    const sent = `${safeDecode(w.path)}\n${w.path}\n${JSON.stringify(w.headers)}\n${w.body?.toString("latin1") ?? ""}`;
    // The admin key lists every tenant (GET /v1/tenants), B's included, whichever tenant it acts for.
    const asAdmin = d.headers.authorization === `Bearer ${o.adminKey}`;
    const forbidden = [...o.b.ids, ...o.b.secrets].filter((s) => !this.tainted.has(s) && !(asAdmin && o.b.visibleToAdmin.includes(s)));
    const leaked = forbidden.filter((s) => text.includes(s) && !sent.includes(s));
    if (leaked.length) {
      fail(
        "leak",
        `leak|${where}|${status}`,
        `an answer to tenant A holds tenant B's ${leaked.map((s) => this.bNames.get(s) ?? "URL, secret, key or name").join(", ")}`,
      );
    }
    // B's id as a path parameter names an object A may not reach; in a write's body, one it may
    // not refer to; in Sluice-Tenant with A's key, a tenant it may not act for. As a filter in a
    // query it may get an empty page (the leak check covers what that page holds).
    const pathOnly = safeDecode(w.path.split("?")[0]!).toLowerCase();
    const inPath = o.b.ids.filter((id) => pathOnly.includes(id));
    const inBody = WRITE_METHODS.includes(w.method) ? o.b.ids.filter((id) => w.body?.toString("latin1").includes(id)) : [];
    const inTenant = !asAdmin && o.b.ids.some((id) => d.headers["sluice-tenant"]?.includes(id));
    if (ok && (inPath.length || inBody.length || inTenant)) {
      const what = [...new Set([...inPath, ...inBody])].map((id) => this.bNames.get(id)).join(", ");
      fail(
        "other-tenant",
        `other-tenant|${where}|${inPath.length ? "path" : inBody.length ? "body" : "header"}`,
        `${status} to A for ${inTenant ? "Sluice-Tenant naming tenant B" : what}`,
      );
      for (const id of inBody) this.tainted.add(id);
    }
    // A body that is not JSON is refused as such (415) by any route that takes one: never parsed,
    // validated or acted on. (Auth, routing and size refusals may come first; those are fine.)
    const mt = mediaType(d.contentType);
    const route = this.ops.find((op) => op.method === w.method && op.path === d.op.path);
    if (route?.body && w.body?.length && mt !== "application/json") {
      if ((status >= 200 && status < 400) || status === 422 || PARSED_CODES.includes(code)) {
        fail(
          "media-type",
          `media|${status}|${code}|${mt ?? "none"}`,
          `content-type ${d.contentType === null ? "(none)" : JSON.stringify(d.contentType)} with a body answered ${status} ${code}, not 415`,
        );
      }
    }
  }

  // --- sending -----------------------------------------------------------------------------

  /**
   * What Sluice logged for a 5xx. With requests in flight side by side, the first error logged
   * since this one was sent may be another's; so the first five 5xx of each operation are sent
   * again alone, everything else held at the gate, and the error logged then is the cause.
   */
  private async cause(w: Wire, logFrom: number): Promise<string | undefined> {
    const log = () => this.o.serverLog?.() ?? "";
    const firstError = (from: number) => loggedErrors(log().slice(from)).find((e) => e.msg === "request failed")?.summary;
    const key = `${opName(w.draft.op)}|${w.method}`;
    const tries = this.replays.get(key) ?? 0;
    if (!this.o.serverLog || tries >= 5 || this.replayed >= 150) return firstError(logFrom);
    this.replays.set(key, tries + 1);
    this.replayed++;
    this.replaying++;
    let open!: () => void;
    const before = this.gate;
    this.gate = new Promise((resolve) => (open = resolve));
    try {
      await before;
      // Every request still in flight is one waiting here too (or stuck: given 5 s).
      for (let waited = 0; this.inflight.size > this.replaying && waited < 5_000; waited += 20) await sleep(20);
      const from = log().length;
      const res = await this.request(w);
      await res.body.dump();
      if (res.statusCode < 500) return `${firstError(logFrom) ?? "(nothing logged)"} (sent again alone, it answered ${res.statusCode})`;
      // The log line may trail the answer through the pipe.
      for (let waited = 0; firstError(from) === undefined && waited < 1_000; waited += 20) await sleep(20);
      return firstError(from);
    } catch {
      return firstError(logFrom);
    } finally {
      this.replaying--;
      open();
    }
  }

  /** One request as the fuzz sends it: cut off by the fuzz's stop or REQUEST_TIMEOUT_MS. */
  private request(w: Wire) {
    return request(this.o.url + w.path, {
      method: w.method,
      headers: w.headers,
      body: w.body ?? null,
      dispatcher: this.agent,
      signal: AbortSignal.any([this.stopper.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
    });
  }

  private async send(w: Wire): Promise<void> {
    const st = this.stats.get(opName(w.draft.op))!;
    st.requests++;
    const logFrom = this.o.serverLog?.().length ?? 0;
    this.inflight.set(w.n, w);
    this.recent.push(w);
    if (this.recent.length > 12) this.recent.shift();
    try {
      const res = await this.request(w);
      const text = Buffer.from(await res.body.arrayBuffer()).toString("utf8");
      st.statuses.set(res.statusCode, (st.statuses.get(res.statusCode) ?? 0) + 1);
      if (res.statusCode >= 200 && res.statusCode < 300) {
        if (w.method === w.draft.op.method) st.ok++;
        try {
          this.pools.harvest(JSON.parse(text));
        } catch {
          /* not JSON: check() says so */
        }
        const key = this.capKey(w.draft);
        if (key !== null) this.created.set(key, (this.created.get(key) ?? 0) + 1);
        if (WRITE_METHODS.includes(w.method)) {
          this.writes.push(w);
          if (this.writes.length > 30) this.writes.shift();
          if (hasExtremeNumber(w.body)) {
            this.extremes.push(w);
            if (this.extremes.length > 20) this.extremes.shift();
          }
        }
      }
      const cause = res.statusCode >= 500 ? await this.cause(w, logFrom) : undefined;
      this.check(w, res.statusCode, text, cause);
    } catch (err) {
      if (this.stopper.signal.aborted) return;
      const e = err as Error & { code?: string };
      // A server may answer (a 400, a 413) and close before it has read a large body; the client
      // then fails writing it and never sees the answer. That is HTTP, not a fault of Sluice's.
      if (["EPIPE", "ECONNRESET", "UND_ERR_SOCKET"].includes(e.code ?? "") && (w.body?.length ?? 0) > 65_536) {
        st.statuses.set(0, (st.statuses.get(0) ?? 0) + 1);
        return;
      }
      this.o.failures.add(
        {
          kind: "no-answer",
          key: `no-answer|${e.name}|${e.code ?? ""}`,
          title: `no answer on ${this.o.label}: ${e.name} ${e.code ?? ""} ${e.message}`,
          detail: this.describe(w, true),
          size: w.body?.length ?? 0,
        },
        opName(w.draft.op),
      );
    } finally {
      this.inflight.delete(w.n);
    }
  }
}

/** One line per store, then one per operation. */
export function summarize(label: string, seed: number, r: FuzzResult): string {
  const covered = r.ops.filter((s) => s.requests > 0).length;
  const ok = r.ops.filter((s) => s.ok > 0).length;
  const lines = [
    `fuzz on ${label}: seed ${seed}, ${r.requests} requests in ${(r.elapsedMs / 1000).toFixed(1)} s (${Math.round((r.requests * 1000) / Math.max(1, r.elapsedMs))}/s), ` +
      `${covered}/${r.ops.length} operations covered, ${ok} of them answered 2xx at least once`,
  ];
  for (const s of r.ops) {
    const statuses = [...s.statuses.entries()]
      .sort(([a], [b]) => a - b)
      .map(([k, v]) => `${k}×${v}`)
      .join(" ");
    lines.push(`  ${opName(s.op).padEnd(48)} ${String(s.requests).padStart(5)} requests  ${statuses}`);
  }
  return lines.join("\n");
}
