import { isIP } from "node:net";
import { ConfigError } from "./errors.js";
import { parseCidrList } from "./policy/cidr.js";

// Every setting in one table: its env variable, flag, default and parser. Flags win over env,
// env over defaults; every problem is reported at once; the result is frozen.

export interface Config {
  databaseUrl: string | undefined;
  directDatabaseUrl: string | undefined;
  /** The cells (schemas of DATABASE_URL's database, docs/citus.md) this process serves; empty: the database itself. */
  cells: string[];
  dataDir: string;
  host: string;
  port: number;
  metricsPort: number | undefined;
  apiKey: string | undefined;
  adminKey: string | undefined;
  /** The address users reach Sluice at (portal links are built on it); else the request's own Host. */
  publicUrl: string | undefined;
  /** Origins allowed to embed the consumer portal in an <iframe> (CSP frame-ancestors). */
  portalFrameAncestors: string[];
  allowPrivateNetworks: boolean;
  allowedCidrs: string[];
  /** Nameservers for destination names; empty: the system's. */
  dnsServers: string[];
  maxPayloadBytes: number;
  maxBatchBytes: number;
  /** Most deliveries one publish request may create (events × the destinations each reaches). */
  maxDeliveriesPerRequest: number;
  retentionHours: number;
  /** The janitor rebuilds an index once its bytes per entry reach this many times the figure after its last rebuild; 0: never. */
  indexRebuildFactor: number;
  /** Deliveries a recovery queues again per transaction. */
  recoveryPageSize: number;
  /** Most sends in flight in one worker process (all destinations together). */
  workerConcurrency: number;
  /** Most sockets to one origin, shared by the destinations on it; unset: the worker's concurrency. */
  maxSocketsPerOrigin: number | undefined;
  /** Claim transactions a worker process runs at once (they never block each other). */
  claimLoops: number;
  /** Destinations claimed per claim transaction. */
  claimBatchSize: number;
  /** Most deliveries granted to one destination per claim. */
  grantCap: number;
  /** Burst tokens held back so that send-time jitter cannot push a receiver over its rate limit. */
  rateSendJitterMs: number;
  /** Added to a destination's timeout to make its lease: lease > timeout + margin, or a slow request could be delivered twice. */
  leaseMarginSeconds: number;
  healthWindow: number;
  healthMinSamples: number;
  pauseAfterFailures: number;
  pauseAfterAuthFailures: number;
  smtpUrl: string | undefined;
  smtpFrom: string;
  dbPoolSize: number;
  logLevel: string;
  /** auto: human lines on a terminal, JSON otherwise. */
  logFormat: "auto" | "json" | "pretty";
  /** How long the first connection to a Postgres server is retried while it is unreachable. */
  dbConnectWaitSeconds: number;
  shutdownGraceSeconds: number;
}

type Parser<T> = (raw: string) => T;

/** The CLI's commands that run Sluice (src/cli/commands.ts); a setting's flag is offered by those it names. */
export const CLI_COMMANDS = ["start", "api", "worker", "migrate", "audit"] as const;
export type CliCommand = (typeof CLI_COMMANDS)[number];
const SERVES_API: readonly CliCommand[] = ["start", "api"];
const RUNS_WORKERS: readonly CliCommand[] = ["start", "worker"];
const RUNS: readonly CliCommand[] = ["start", "api", "worker"];

interface Setting<K extends keyof Config> {
  key: K;
  env: string;
  /** A command-line flag for it (`--<flag> <arg>`), offered by `commands` (default: every command). */
  flag?: string;
  arg?: string;
  commands?: readonly CliCommand[];
  default: Config[K];
  parse: Parser<Config[K]>;
  doc: string;
  /** Holds a password or key: a bad value is not echoed in the error. */
  secret?: boolean;
}

const int =
  (min: number, max: number): Parser<number> =>
  (raw) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`must be a whole number from ${min} to ${max}`);
    return n;
  };
const str: Parser<string> = (raw) => raw;
/** `ip`, `ip:port` or `[ipv6]:port`, as dns.Resolver.setServers takes them. */
const nameservers: Parser<string[]> = (raw) =>
  raw
    .split(/[\s,]+/)
    .filter((x) => x !== "")
    .map((server) => {
      const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(server) ?? /^([^:]+)(?::(\d+))?$/.exec(server) ?? [server, server, undefined];
      const [ip, port] = [m[1], m[2]];
      const portOk = port === undefined || (Number(port) >= 1 && Number(port) <= 65_535);
      if (isIP(ip) === 0 || !portOk) throw new Error(`'${server}' is not a nameserver: give an IP, ip:port or [ipv6]:port`);
      return server;
    });
const optStr: Parser<string | undefined> = (raw) => (raw === "" ? undefined : raw);
const bool: Parser<boolean> = (raw) => {
  if (["1", "true", "yes", "on"].includes(raw.toLowerCase())) return true;
  if (["0", "false", "no", "off", ""].includes(raw.toLowerCase())) return false;
  throw new Error("must be 1/true/yes/on or 0/false/no/off");
};

/** DATABASE_URL: a postgres:// or postgresql:// URL. Errors never repeat the value (it holds a password). */
const postgresUrl: Parser<string | undefined> = (raw) => {
  if (raw === "") return undefined;
  // A host list (h1:5432,h2:5432, for a primary and its standbys) is no WHATWG URL: its hosts and
  // target_session_attrs are checked as the store opens (src/db/hosts.ts, a layer above this one),
  // and a bad one is reported as SLUICE_CONFIG_INVALID there.
  if (/^postgres(ql)?:\/\/[^/?#]*,/i.test(raw)) return raw;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(
      "is not a URL; expected postgres://user:password@host:5432/database " +
        "(characters such as @ : / # in the password must be percent-encoded, e.g. @ as %40)",
    );
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new Error(`is a ${url.protocol}// URL, not a Postgres one; expected postgres://user:password@host:5432/database`);
  }
  return raw;
};

/** An http(s) base address, kept without a trailing slash. */
const publicUrl: Parser<string | undefined> = (raw) => {
  if (raw === "") return undefined;
  if (!/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(raw))
    throw new Error("must be an http:// or https:// address, e.g. https://hooks.example.com");
  return raw.replace(/\/+$/, "");
};

/** Origins for CSP frame-ancestors: scheme://host[:port], or a wildcard subdomain https://*.example.com. */
const origins: Parser<string[]> = (raw) => {
  const list = raw.split(/[\s,]+/).filter(Boolean);
  const bad = list.filter((o) => !/^https?:\/\/(\*\.)?[a-z0-9.-]+(:\d{1,5})?$/i.test(o));
  if (bad.length) throw new Error(`${bad.join(", ")}: each must be an origin such as https://app.example.com (no path, no trailing slash)`);
  return list;
};

/**
 * Why `name` is not a cell's name (docs/citus.md), or null when it is one: a lower-case
 * identifier that needs no quoting in SQL, and not a schema Postgres keeps for itself.
 */
export function cellNameProblem(name: string): string | null {
  if (/^(?!pg_)[a-z_][a-z0-9_]{0,62}$/.test(name) && name !== "public" && name !== "information_schema") return null;
  return (
    `"${name}" is not a cell name: use 1–63 lower-case letters, digits and _, starting with a letter or _` +
    " (not pg_…, public or information_schema)"
  );
}

function setting<K extends keyof Config>(s: Setting<K>): Setting<K> {
  return s;
}

export const SETTINGS = [
  setting({
    key: "databaseUrl",
    env: "DATABASE_URL",
    default: undefined,
    parse: postgresUrl,
    secret: true,
    doc: "Postgres server URL (14+). Unset: embedded PGlite in SLUICE_DATA_DIR.",
  }),
  setting({
    key: "directDatabaseUrl",
    env: "SLUICE_DIRECT_DATABASE_URL",
    default: undefined,
    parse: postgresUrl,
    secret: true,
    doc:
      "A direct connection to DATABASE_URL's database, when DATABASE_URL goes through a transaction pooler " +
      "(PgBouncer): LISTEN/NOTIFY use it, and the pooled statements go unnamed. Unset: DATABASE_URL is direct.",
  }),
  setting({
    key: "cells",
    env: "SLUICE_CELLS",
    flag: "cells",
    arg: "a,b",
    commands: [...RUNS, "migrate"],
    default: [],
    parse: (raw) => {
      const list = raw
        .split(",")
        .map((c) => c.trim())
        .filter(Boolean);
      const problems = list.map(cellNameProblem).filter((p) => p !== null);
      if (problems.length) throw new Error(problems.join("; "));
      if (new Set(list).size !== list.length) throw new Error("names a cell twice");
      return list;
    },
    doc:
      "Comma list of cells (made by `sluice cells create`) this process serves, on DATABASE_URL's database: each a whole " +
      "store for a group of tenants; the first also holds the default tenant. Unset: the database itself is the store.",
  }),
  setting({
    key: "dataDir",
    env: "SLUICE_DATA_DIR",
    flag: "data-dir",
    arg: "DIR",
    default: "./.sluice",
    parse: str,
    doc: "Folder of the embedded store.",
  }),
  setting({
    key: "host",
    env: "SLUICE_HOST",
    flag: "host",
    arg: "ADDR",
    commands: SERVES_API,
    default: "127.0.0.1",
    parse: str,
    doc: "Address the API listens on.",
  }),
  setting({
    key: "port",
    env: "SLUICE_PORT",
    flag: "port",
    arg: "N",
    commands: SERVES_API,
    default: 3000,
    parse: int(0, 65535),
    doc: "Port the API listens on.",
  }),
  setting({
    key: "metricsPort",
    env: "SLUICE_METRICS_PORT",
    flag: "metrics-port",
    arg: "N",
    commands: RUNS,
    default: undefined,
    parse: (r) => (r === "" ? undefined : int(0, 65535)(r)),
    doc: "Serve /metrics on this port instead of the API port.",
  }),
  setting({
    key: "apiKey",
    env: "SLUICE_API_KEY",
    default: undefined,
    parse: optStr,
    secret: true,
    doc: "Key of the default tenant, created on first start; a new key joins the existing default tenant.",
  }),
  setting({
    key: "adminKey",
    env: "SLUICE_ADMIN_KEY",
    default: undefined,
    parse: optStr,
    secret: true,
    doc: "The admin key: creates and lists tenants (/v1/tenants) and acts for the tenant a Sluice-Tenant header names.",
  }),
  setting({
    key: "publicUrl",
    env: "SLUICE_PUBLIC_URL",
    default: undefined,
    parse: publicUrl,
    doc: "The address users reach Sluice at, e.g. https://hooks.example.com; portal links are built on it (default: the request's Host).",
  }),
  setting({
    key: "portalFrameAncestors",
    env: "SLUICE_PORTAL_FRAME_ANCESTORS",
    default: [],
    parse: origins,
    doc: "Space or comma list of origins (https://app.example.com) allowed to embed the consumer portal in an iframe.",
  }),
  setting({
    key: "allowPrivateNetworks",
    env: "SLUICE_ALLOW_PRIVATE_NETWORKS",
    default: false,
    parse: bool,
    doc: "Allow delivery to loopback/private/link-local addresses.",
  }),
  setting({
    key: "allowedCidrs",
    env: "SLUICE_ALLOWED_CIDRS",
    default: [],
    parse: (r) => parseCidrList(r),
    doc: "Comma list of CIDRs delivery may reach even though private (e.g. 127.0.0.0/8).",
  }),
  setting({
    key: "dnsServers",
    env: "SLUICE_DNS_SERVERS",
    default: [],
    parse: nameservers,
    doc: "Comma list of nameservers (ip, ip:port or [ipv6]:port) that destination host names are resolved with; unset: the system's (/etc/resolv.conf).",
  }),
  setting({
    key: "maxPayloadBytes",
    env: "SLUICE_MAX_PAYLOAD_BYTES",
    default: 1_048_576,
    parse: int(1, 64 * 1_048_576),
    doc: "Largest event payload (bytes of JSON).",
  }),
  setting({
    key: "maxBatchBytes",
    env: "SLUICE_MAX_BATCH_BYTES",
    default: 32 * 1_048_576,
    parse: int(1024, 1024 * 1_048_576),
    doc: "Largest POST /v1/events/batch body.",
  }),
  setting({
    key: "maxDeliveriesPerRequest",
    env: "SLUICE_MAX_DELIVERIES_PER_REQUEST",
    default: 100_000,
    parse: int(1000, 10_000_000),
    doc: "Most deliveries one publish may create (events × the destinations each reaches); more is 413. One request's fan-out is one transaction, and on the embedded store nothing else runs while it does.",
  }),
  setting({
    key: "retentionHours",
    env: "SLUICE_RETENTION_HOURS",
    default: 168,
    // Fractions down to a minute, so that a soak test sees retention at work within its run.
    parse: (raw) => {
      const n = Number(raw);
      if (raw.trim() === "" || !(n >= 1 / 60 && n <= 24 * 3650))
        throw new Error(`must be a number of hours from 0.017 (a minute) to ${24 * 3650}`);
      return n;
    },
    doc: "Finished deliveries, their attempts and events are pruned after this many hours (fractions allowed: 0.25 is 15 minutes). Attempts go in time partitions at most a quarter of this wide, each dropped whole once past it.",
  }),
  setting({
    key: "indexRebuildFactor",
    env: "SLUICE_INDEX_REBUILD_FACTOR",
    default: 2,
    parse: (raw) => {
      const n = Number(raw);
      if (raw.trim() === "" || !(n === 0 || (n >= 1.2 && n <= 100)))
        throw new Error("must be 0 (never rebuild) or a number from 1.2 to 100");
      return n;
    },
    doc: "The janitor rebuilds an index of 16 MB or more (REINDEX CONCURRENTLY) once its size per entry reaches this many times what it was after its last rebuild: deliveries held for a long time keep time-ordered index pages mostly empty. 0 turns rebuilds off.",
  }),
  // One page is one transaction holding the destination's row lock: small enough that claims and
  // ingest barely wait for it, large enough that a million-row recovery is 2,000 statements.
  setting({
    key: "recoveryPageSize",
    env: "SLUICE_RECOVERY_PAGE_SIZE",
    default: 500,
    parse: int(1, 10_000),
    doc: "Deliveries a recovery (POST /v1/destinations/{id}/recover) queues again per transaction.",
  }),
  setting({
    key: "workerConcurrency",
    env: "SLUICE_WORKER_CONCURRENCY",
    flag: "concurrency",
    arg: "N",
    commands: RUNS_WORKERS,
    default: 512,
    parse: int(1, 20_000),
    doc: "Most requests in flight from one worker process.",
  }),
  setting({
    key: "maxSocketsPerOrigin",
    env: "SLUICE_MAX_SOCKETS_PER_ORIGIN",
    default: undefined,
    parse: (raw) => (raw === "" ? undefined : int(1, 20_000)(raw)),
    doc: "Most sockets from one worker to one origin (host:port), shared by the destinations on it. Unset: the worker's concurrency, so no request waits for a socket. Set below it, destinations on one host:port queue for sockets, and a slow one delays the others.",
  }),
  setting({
    key: "claimLoops",
    env: "SLUICE_CLAIM_LOOPS",
    default: 2,
    parse: int(1, 16),
    doc: "Claim transactions one worker runs at once; overlapping them hides database latency.",
  }),
  // Small on purpose: a claim holds its destinations' row locks for its whole transaction, and
  // ingest waits on those locks to move ready_at. 25 doubled ingest in the benchmark vs 100.
  setting({
    key: "claimBatchSize",
    env: "SLUICE_CLAIM_BATCH",
    default: 25,
    parse: int(1, 10_000),
    doc: "Destinations claimed per claim transaction.",
  }),
  setting({
    key: "grantCap",
    env: "SLUICE_GRANT_CAP",
    default: 100,
    parse: int(1, 10_000),
    doc: "Most deliveries granted to one destination per claim.",
  }),
  setting({
    key: "rateSendJitterMs",
    env: "SLUICE_RATE_SEND_JITTER_MS",
    default: 500,
    parse: int(0, 10_000),
    doc: "Send jitter the rate limits allow for: this many ms of tokens (at most half the burst) are held back from each burst, so a limit holds as counted at the receiver, not only at grant time. 0 = exact at grant time only.",
  }),
  setting({
    key: "leaseMarginSeconds",
    env: "SLUICE_LEASE_MARGIN_SECONDS",
    default: 30,
    parse: int(1, 3600),
    doc: "Lease = timeout + this margin.",
  }),
  setting({
    key: "healthWindow",
    env: "SLUICE_HEALTH_WINDOW",
    default: 50,
    parse: int(1, 1000),
    doc: "Attempts (429s excluded) a destination's health score is taken over.",
  }),
  setting({
    key: "healthMinSamples",
    env: "SLUICE_HEALTH_MIN_SAMPLES",
    default: 10,
    parse: int(1, 1000),
    doc: "Attempts in the window before the score can lower the status or pause.",
  }),
  setting({
    key: "pauseAfterFailures",
    env: "SLUICE_PAUSE_AFTER_FAILURES",
    default: 10,
    parse: int(1, 10_000),
    doc: "Consecutive failures that pause a destination.",
  }),
  setting({
    key: "pauseAfterAuthFailures",
    env: "SLUICE_PAUSE_AFTER_AUTH_FAILURES",
    default: 3,
    parse: int(1, 10_000),
    doc: "Consecutive 401/403/404 answers that pause a destination (they do not heal by themselves).",
  }),
  setting({
    key: "smtpUrl",
    env: "SLUICE_SMTP_URL",
    default: undefined,
    parse: optStr,
    secret: true,
    doc: "smtp:// or smtps:// URL (user:password@host:port) for alert e-mails to each tenant's alert_email; unset: no e-mail.",
  }),
  setting({
    key: "smtpFrom",
    env: "SLUICE_SMTP_FROM",
    default: "Sluice <sluice@localhost>",
    parse: str,
    doc: "From address of alert e-mails.",
  }),
  setting({
    key: "dbPoolSize",
    env: "SLUICE_DB_POOL_SIZE",
    default: 10,
    parse: int(1, 200),
    doc: "Connections per process to a Postgres server.",
  }),
  // Containers often start Sluice and Postgres together: wait for the server instead of failing.
  setting({
    key: "dbConnectWaitSeconds",
    env: "SLUICE_DB_CONNECT_WAIT_SECONDS",
    default: 30,
    parse: int(0, 3600),
    doc: "At start, how long to keep retrying an unreachable Postgres server before giving up. 0 = fail at once.",
  }),
  setting({
    key: "logLevel",
    env: "SLUICE_LOG_LEVEL",
    flag: "log-level",
    arg: "LEVEL",
    default: "info",
    parse: (r) => {
      if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(r))
        throw new Error("must be one of fatal, error, warn, info, debug, trace, silent");
      return r;
    },
    doc: "Log level: fatal, error, warn, info, debug (adds each delivered attempt and stack traces of start-up errors), trace or silent.",
  }),
  setting({
    key: "logFormat",
    env: "SLUICE_LOG_FORMAT",
    flag: "log-format",
    arg: "FORMAT",
    default: "auto",
    parse: (r) => {
      if (r !== "auto" && r !== "json" && r !== "pretty") throw new Error("must be one of auto, json, pretty");
      return r;
    },
    doc: "auto: readable lines on a terminal, JSON otherwise; json or pretty force one.",
  }),
  setting({
    key: "shutdownGraceSeconds",
    env: "SLUICE_SHUTDOWN_GRACE_SECONDS",
    default: 20,
    parse: int(0, 600),
    doc: "On SIGTERM, how long in-flight requests may finish before their leases are released.",
  }),
] as const;

/** Builds the frozen config from flags (`--port 3001` → { port: "3001" }) and the environment. */
export function loadConfig(flags: Record<string, string | undefined> = {}, env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const s of SETTINGS) {
    const fromFlag = s.flag ? flags[s.flag] : undefined;
    const raw = fromFlag ?? env[s.env];
    if (raw === undefined) {
      out[s.key] = s.default;
      continue;
    }
    try {
      out[s.key] = (s.parse as Parser<unknown>)(raw);
    } catch (err) {
      const where = fromFlag !== undefined ? `--${s.flag}` : s.env;
      const shown = s.secret ? "" : `=${JSON.stringify(raw)}`;
      problems.push(`${where}${shown}: ${(err as Error).message}`);
    }
  }
  if (problems.length) throw new ConfigError(problems);
  return deepFreeze(out as unknown as Config);
}

/** Settings are read once: nothing may change them afterwards, not even inside a list. */
function deepFreeze<T>(value: T): Readonly<T> {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/**
 * Edit distance with adjacent transpositions counting as one edit (optimal string alignment),
 * so the common typo "prot" for "port" is 1 away, not 2.
 */
export function editDistance(a: string, b: string): number {
  // d[i][j] = distance between a[0..i) and b[0..j); three rows are all the recurrence reads.
  let prev2: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2]! + 1);
      cur.push(d);
    }
    prev2 = prev;
    prev = cur;
  }
  return prev[b.length]!;
}

/** The candidate nearest to `word` (case-insensitive), if it is near enough to be a likely typo. */
export function closestMatch(word: string, candidates: readonly string[]): string | undefined {
  // Up to a third of the word may be wrong (at least 2 edits): "--prot" → "--port", but "--x" → nothing.
  const limit = Math.max(2, Math.floor(word.length / 3));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return bestDistance <= limit ? best : undefined;
}

// SLUICE_* variables that are not settings but are read on purpose: by the test and bench
// harnesses, SLUICE_PG_FSYNC and SLUICE_PG_LOG_DIR by scripts/pg-server.mjs, SLUICE_CITUS_URL by
// npm run test:citus, and by the CLI's API commands and
// `sluice listen` (src/cli/client, src/cli/listen.ts), often exported in the same shell.
const NOT_SETTINGS = [
  /^SLUICE_TEST_/,
  /^SLUICE_BENCH_/,
  /^SLUICE_PG_FSYNC$/,
  /^SLUICE_PG_LOG_DIR$/,
  /^SLUICE_CITUS_URL$/,
  /^SLUICE_URL$/,
  /^SLUICE_LISTEN_SECRET$/,
];

export interface UnknownSetting {
  name: string;
  /** The real setting it is probably a typo of. */
  suggestion: string | undefined;
}

/** SLUICE_* environment variables Sluice does not know: most likely typos, which would silently do nothing. */
export function unknownEnvSettings(env: NodeJS.ProcessEnv = process.env): UnknownSetting[] {
  const known: string[] = SETTINGS.map((s) => s.env);
  // Compared without the shared prefix, which would otherwise make every name look close.
  const suffixes = known.filter((k) => k.startsWith("SLUICE_")).map((k) => k.slice("SLUICE_".length));
  return Object.keys(env)
    .filter((name) => name.toUpperCase().startsWith("SLUICE_") && !known.includes(name) && !NOT_SETTINGS.some((re) => re.test(name)))
    .sort()
    .map((name) => {
      const near = closestMatch(name.slice("SLUICE_".length), suffixes);
      return { name, suggestion: near === undefined ? undefined : `SLUICE_${near}` };
    });
}
