import { existsSync } from "node:fs";
import http from "node:http";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Config } from "./config.js";
import { sleep } from "./sleep.js";
import { Releasers } from "./releasers.js";
import { describeServer, isStoreUnavailable, onAbortedTransaction, openDb, type AbortedTransaction, type Db } from "./db/db.js";
import { acquireStoreLock, type StoreLock } from "./db/folder-lock.js";
import { migrate } from "./db/migrate.js";
import { WORK_CHANNEL } from "./db/channels.js";
import { buildApi } from "./api/server.js";
import { cellFront } from "./api/cell-front.js";
import { CELL_PLACEHOLDER, cellUrl, hasCellPlaceholder } from "./db/cell-url.js";
import { directoryExists, listCells } from "./db/queries/cell-directory.js";
import { Dispatcher } from "./dispatch/dispatcher.js";
import { startJanitor } from "./dispatch/janitor.js";
import { startRecoveryWorker } from "./dispatch/recovery.js";
import { Sender } from "./delivery/sender.js";
import { ensureDefaultTenant } from "./bootstrap.js";
import { metrics, registry, registerDatabaseGauges, setBuildInfo } from "./metrics.js";
import { AlertSender } from "./alerts/alerts.js";
import { ConfigError, StartupError, StoreUnavailableError } from "./errors.js";
import { createLogger } from "./logger.js";
import { startTracing, type Tracing } from "./tracing/tracing.js";
import { VERSION } from "./package-root.js";

export { VERSION };
export const USER_AGENT = `Sluice/${VERSION} (+https://github.com/sluice-webhooks)`;

export interface RunOptions {
  api: boolean;
  worker: boolean;
  shard?: [number, number] | null;
  log?: Logger;
  /** The CLI command (start, api, worker), for the store lock; derived from api/worker if absent. */
  command?: string;
  /** Called with a generated default-tenant key (first start without SLUICE_API_KEY). */
  onGeneratedKey?: (key: string) => void;
}

export interface Running {
  /** The store: the database itself, or the first cell served. */
  db: Db;
  /** The cells served (SLUICE_CELLS), each with its store; empty when the database itself is served. */
  cells: { cell: string; db: Db }[];
  url: string | null;
  /** Where /metrics is served on its own port (SLUICE_METRICS_PORT), else null. */
  metricsUrl: string | null;
  api: FastifyInstance | null;
  dispatcher: Dispatcher | null;
  stop(): Promise<void>;
}

export interface Store {
  db: Db;
  /** Closes the store and lets go of its lock. */
  close(): Promise<void>;
}

/**
 * Opens the store for `command`: the embedded one after taking its folder's lock (one process at
 * a time), or a Postgres server, waiting up to SLUICE_DB_CONNECT_WAIT_SECONDS while it is
 * unreachable. Failures are StartupErrors that say what to mend.
 */
export async function openStore(config: Readonly<Config>, opts: { command: string; log: Logger }): Promise<Store> {
  const { log } = opts;
  if (config.databaseUrl) {
    const db = await connectServer(config, log);
    return { db, close: () => db.close() };
  }
  const inMemory = config.dataDir.startsWith("memory://");
  // Before PGlite opens the folder: a second process on it would corrupt it.
  const lock: StoreLock | null = inMemory ? null : acquireStoreLock(config.dataDir, opts.command, log);
  try {
    if (!inMemory && !existsSync(`${config.dataDir}/PG_VERSION`)) {
      log.info({ dataDir: config.dataDir }, "creating the embedded Postgres store (first start only; takes a few seconds)");
    }
    const db = await openDb({ dataDir: config.dataDir });
    return {
      db,
      async close() {
        try {
          await db.close();
        } finally {
          lock?.release();
        }
      },
    };
  } catch (err) {
    lock?.release();
    throw err;
  }
}

/** The first connection to a Postgres server, retried while the server is unreachable. */
export async function connectServer(config: Readonly<Config>, log: Logger, cell?: string): Promise<Db> {
  const url = config.databaseUrl!;
  const where = describeServer(url);
  const started = Date.now();
  const deadline = started + config.dbConnectWaitSeconds * 1000;
  let lastLog = 0;
  for (;;) {
    try {
      return await openDb({ databaseUrl: url, directUrl: config.directDatabaseUrl, poolSize: config.dbPoolSize, cell });
    } catch (err) {
      const cause = err instanceof StoreUnavailableError ? err.cause : err;
      const code = (cause as { code?: unknown } | null)?.code;
      const message = (cause as Error | null)?.message ?? String(cause);
      if (code === "28P01" || code === "28000") {
        throw new StartupError("SLUICE_STORE_AUTH_FAILED", { store: where, reason: message }, { cause });
      }
      if (code === "3D000") {
        throw new StartupError("SLUICE_STORE_NO_DATABASE", { store: where, reason: message }, { cause });
      }
      if (!isStoreUnavailable(err)) throw err;
      const now = Date.now();
      if (now >= deadline) {
        const seconds = Math.round((now - started) / 1000);
        throw new StartupError("SLUICE_STORE_UNREACHABLE", { store: where, seconds, reason: reasonOf(cause) }, { cause });
      }
      if (now - lastLog >= 5_000) {
        lastLog = now;
        log.warn(
          { store: where, reason: reasonOf(cause) },
          `waiting for ${where} (${reasonOf(cause)}); trying for up to ${config.dbConnectWaitSeconds} s`,
        );
      }
      await sleep(Math.min(1_000, deadline - now));
    }
  }
}

/** "connection refused, ECONNREFUSED" and the like, from a connect error (or the last of several). */
function reasonOf(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown; errors?: unknown[] } | null;
  const code = typeof e?.code === "string" ? e.code : undefined;
  const named: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ENOTFOUND: "host name not found",
    EAI_AGAIN: "host name lookup failed",
    ETIMEDOUT: "timed out",
    EHOSTUNREACH: "host unreachable",
    ENETUNREACH: "network unreachable",
  };
  if (code && named[code]) return `${named[code]}, ${code}`;
  // Several addresses (localhost: ::1 and 127.0.0.1) fail together in an AggregateError.
  if (Array.isArray(e?.errors) && e.errors.length > 0) return reasonOf(e.errors[e.errors.length - 1]);
  const message = typeof e?.message === "string" && e.message ? e.message : "no answer";
  return code ? `${message}, ${code}` : message;
}

/** A failed listen as a StartupError that says which setting to change (other errors pass). */
function listenError(err: unknown, host: string, port: number, setting: "api" | "metrics"): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const problem =
    code === "EADDRINUSE"
      ? `port ${port} is already in use by another process`
      : code === "EACCES"
        ? `not allowed to listen on port ${port} (ports below 1024 need privileges)`
        : code === "EADDRNOTAVAIL"
          ? `${host} is not an address of this machine`
          : code === "ENOTFOUND" || code === "EAI_AGAIN"
            ? `the host name ${host} is unknown`
            : null;
  if (problem === null) return err;
  return new StartupError(
    "SLUICE_LISTEN_FAILED",
    {
      what: setting === "api" ? "the API" : "/metrics",
      address: `${host.includes(":") ? `[${host}]` : host}:${port}`,
      problem,
      portFlags: setting === "api" ? "--port / SLUICE_PORT" : "--metrics-port / SLUICE_METRICS_PORT",
    },
    { cause: err },
  );
}

/** One store a process serves: the database itself, or one of its cells (docs/citus.md). */
interface Served {
  /** The cell, or null for the database itself. */
  cell: string | null;
  db: Db;
  api: FastifyInstance | null;
  dispatcher: Dispatcher | null;
}

/**
 * The stores `config` names: the database (or embedded folder), or each cell of SLUICE_CELLS,
 * each with its own pool. A cell must be listed by the directory (`sluice cells create`), so
 * that a mistyped name fails at start rather than serving an empty schema.
 */
async function openServed(config: Readonly<Config>, opts: { command: string; log: Logger }, releasers: Releasers): Promise<Served[]> {
  if (config.cells.length === 0) {
    if (config.databaseUrl !== undefined && hasCellPlaceholder(config.databaseUrl)) {
      throw new ConfigError([`DATABASE_URL: has ${CELL_PLACEHOLDER} in it, for a role per cell, but SLUICE_CELLS names no cell to serve`]);
    }
    const store = await openStore(config, opts);
    releasers.push("store", () => store.close());
    return [{ cell: null, db: store.db, api: null, dispatcher: null }];
  }
  if (!config.databaseUrl) throw new ConfigError(["SLUICE_CELLS: cells live in a Postgres server's database; set DATABASE_URL to it"]);
  const served: Served[] = [];
  if (config.directDatabaseUrl !== undefined && !hasCellPlaceholder(config.databaseUrl)) {
    // PgBouncer refuses the startup option that sets a cell's search_path: through a pooler, each
    // cell is reached as a role of its own (docs/citus.md, "Behind a pooler").
    throw new ConfigError([
      `DATABASE_URL: behind a pooler (SLUICE_DIRECT_DATABASE_URL is set), cells are reached as a role per cell: put ${CELL_PLACEHOLDER} where the cell's role goes, e.g. postgres://sluice_${CELL_PLACEHOLDER}:…@pgbouncer:6432/sluice`,
    ]);
  }
  for (const cell of config.cells) {
    const url = cellUrl(config.databaseUrl, cell);
    const direct = config.directDatabaseUrl === undefined ? undefined : cellUrl(config.directDatabaseUrl, cell);
    const db = await connectServer({ ...config, databaseUrl: url, directDatabaseUrl: direct }, opts.log, cell);
    releasers.push(`store of cell ${cell}`, () => db.close());
    served.push({ cell, db, api: null, dispatcher: null });
  }
  const listed = (await directoryExists(served[0]!.db)) ? new Set((await listCells(served[0]!.db)).map((c) => c.name)) : new Set<string>();
  const missing = config.cells.filter((c) => !listed.has(c));
  if (missing.length > 0) {
    throw new StartupError("SLUICE_CELL_UNKNOWN", { cells: missing.join(", "), store: served[0]!.db.where.replace(/\?.*$/, "") });
  }
  return served;
}

/** Logs a store going away and coming back once each (requests and claims do not log it). Returns the unsubscribe. */
function watchStore(db: Db, cell: string | null, log: Logger): () => void {
  // While it stays away, why a try to bring it back failed, when that changes and once a minute.
  let lostAt: number | null = null;
  let still: { cause: string | undefined; at: number } | null = null;
  const which = cell === null ? {} : { cell };
  return db.onAvailability((up, err) => {
    // Why, in the operator's words: the refused connection, the server shutting down, the
    // embedded store's thread that stopped, the folder that would not open again.
    const cause = err?.cause instanceof Error ? err.cause.message : undefined;
    if (!up && lostAt !== null) {
      const now = Date.now();
      if (still !== null && still.cause === cause && now - still.at < 60_000) return;
      still = { cause, at: now };
      const seconds = (now - lostAt) / 1000;
      log.warn(
        { store: db.where, ...which, cause, down_seconds: seconds },
        `store still unreachable after ${seconds.toFixed(1)} s (${db.where}${cause ? `: ${cause}` : ""}); trying again`,
      );
    } else if (!up) {
      lostAt = Date.now();
      still = null;
      log.warn(
        { store: db.where, ...which, cause },
        `lost the store (${db.where}${cause ? `: ${cause}` : ""}); the API answers 503 and delivery pauses until it returns`,
      );
    } else {
      const seconds = lostAt === null ? 0 : (Date.now() - lostAt) / 1000;
      lostAt = null;
      log.info({ store: db.where, ...which, down_seconds: seconds }, `store reachable again after ${seconds.toFixed(1)} s`);
    }
  });
}

/** Why Postgres aborted a transaction that Sluice runs again, in the operator's words. */
const ABORT_CAUSES: Record<AbortedTransaction["reason"], string> = {
  deadlock: "a deadlock",
  serialization: "a serialization failure",
  cell_moved: "its cell moving to another Citus node mid-statement",
};

/** Opens the store (or each cell), migrates, and starts the API and/or the delivery worker in this process. */
export async function run(config: Readonly<Config>, opts: RunOptions): Promise<Running> {
  const log = opts.log ?? createLogger(config);
  const command = opts.command ?? (opts.api && opts.worker ? "start" : opts.api ? "api" : "worker");
  const releasers = new Releasers();
  // Everything started so far, stopped in reverse: by stop(), or when a later start step fails.
  const shutdown = () => releasers.releaseAll((name, err) => log.warn({ err, component: name }, `stopping ${name} failed`));

  let url: string | null = null;
  let metricsUrl: string | null = null;
  let served: Served[];
  let bootstrapped: (value: unknown) => void = () => undefined;
  const bootstrapDone = new Promise((resolve) => (bootstrapped = resolve));
  try {
    served = await openServed(config, { command, log }, releasers);
    for (const s of served) releasers.push("store watch", watchStore(s.db, s.cell, log));

    // A transaction Postgres aborted (deadlock, serialization failure) is run again and so unseen:
    // each is a warning, with Postgres's account of who waited for what, and a metric.
    const offAborted = onAbortedTransaction((a) => {
      metrics.transactionsAborted.inc({ reason: a.reason });
      log.warn(
        { reason: a.reason, detail: a.detail, attempt: a.attempt, retried: a.retried },
        `a transaction was aborted by ${ABORT_CAUSES[a.reason]}; ${a.retried ? "running it again" : "giving up after " + a.attempt + " tries"}`,
      );
    });
    releasers.push("transaction watch", offAborted);

    // Off (nothing loaded) unless OTEL_* variables ask for traces. Released after the parts that
    // make spans, so their last spans are exported.
    const tracing = await startTracing(log.child({ component: "tracing" }), VERSION);
    releasers.push("tracing", () => tracing.shutdown());
    for (const s of served) {
      const applied = await migrate(s.db);
      if (applied.length) log.info({ applied, ...(s.cell === null ? {} : { cell: s.cell }) }, "migrations applied");
    }

    setBuildInfo(VERSION);
    // The gauges sampled from the database describe the shared store, not this process: only
    // processes that run the API export them, so a sum() over every worker's /metrics does not
    // count the store once per worker (docs/metrics.md).
    if (opts.api) registerDatabaseGauges(served.map((s) => ({ db: s.db, cell: s.cell })));

    // The default tenant is made only once the ports are open: a start that fails on a busy port
    // must not spend the key that is shown only once.
    if (opts.api) {
      for (const s of served) {
        const ctx = { db: s.db, config, log, version: VERSION, ready: bootstrapDone, tracing };
        const server = await buildApi(s.cell === null ? ctx : { ...ctx, cell: s.cell });
        s.api = server;
        // Stop taking requests first, before anything else stops.
        releasers.pushIntake(s.cell === null ? "api" : `api of cell ${s.cell}`, () => server.close());
      }
      try {
        url = await listenApi(served, config, log, releasers);
      } catch (err) {
        throw listenError(err, config.host, config.port, "api");
      }
    }
    if (config.metricsPort !== undefined) {
      const server = http.createServer((_req, res) => {
        registry.metrics().then(
          (body) => {
            res.writeHead(200, { "content-type": registry.contentType });
            res.end(body);
          },
          (err: unknown) => {
            log.warn({ err }, "could not collect /metrics");
            res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
            res.end("could not collect metrics\n");
          },
        );
      });
      releasers.push("metrics", () => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve())));
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(config.metricsPort, config.host, () => {
          server.removeListener("error", reject);
          resolve();
        });
      }).catch((err: unknown) => {
        throw listenError(err, config.host, config.metricsPort!, "metrics");
      });
      const address = server.address() as { port: number };
      metricsUrl = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${address.port}/metrics`;
    }

    if (opts.api) {
      try {
        // With cells, the default tenant lives in the first.
        const home = served[0]!;
        const boot = await ensureDefaultTenant(home.db, config.apiKey, home.cell);
        if (boot.generatedKey) opts.onGeneratedKey?.(boot.generatedKey);
        if (boot.addedKeyToTenantId)
          log.info({ tenant_id: boot.addedKeyToTenantId }, "SLUICE_API_KEY was new: added it as another key of the default tenant");
      } finally {
        bootstrapped(undefined);
      }
    }

    if (opts.worker) {
      // The process's send budget is shared out among the cells it serves.
      const workerConcurrency = Math.max(1, Math.ceil(config.workerConcurrency / served.length));
      const inflight = workerConcurrency * served.length;
      if (config.maxSocketsPerOrigin !== undefined && config.maxSocketsPerOrigin < inflight) {
        log.warn(
          { max_sockets_per_origin: config.maxSocketsPerOrigin, worker_concurrency: inflight },
          `SLUICE_MAX_SOCKETS_PER_ORIGIN=${config.maxSocketsPerOrigin} is below the ${inflight} requests this worker may have in flight: ` +
            "destinations on one host:port queue for its sockets, a slow one delaying the others; unset it unless that host limits connections",
        );
      }
      const sender = new Sender({
        network: { allowPrivateNetworks: config.allowPrivateNetworks, allowedCidrs: config.allowedCidrs },
        userAgent: USER_AGENT,
        // As many sockets as the dispatchers may have requests in flight: a claimed delivery is
        // sent at once, never queued behind another destination's requests to the same host.
        maxSocketsPerOrigin: config.maxSocketsPerOrigin ?? inflight,
        dnsServers: config.dnsServers,
      });
      // After the dispatchers, which wait out the grace period and release what is left.
      releasers.push("sender", () => sender.destroy());
      for (const s of served) {
        s.dispatcher = await startWorker(s, { config, log, tracing, sender, shard: opts.shard ?? null, workerConcurrency }, releasers);
      }
    }
  } catch (err) {
    bootstrapped(undefined);
    await shutdown().catch((e: unknown) => log.debug({ err: e }, "error while cleaning up a failed start"));
    throw err;
  }

  const first = served[0]!;
  return {
    db: first.db,
    cells: served.flatMap((s) => (s.cell === null ? [] : [{ cell: s.cell, db: s.db }])),
    url,
    metricsUrl,
    api: first.api,
    dispatcher: first.dispatcher,
    stop: shutdown,
  };
}

/**
 * Opens the API's port: the one store's API listens itself; several cells' APIs share one port
 * through the front that hands each request to its tenant's cell (api/cell-front.ts).
 */
async function listenApi(served: Served[], config: Readonly<Config>, log: Logger, releasers: Releasers): Promise<string> {
  const only = served[0]!;
  if (only.cell === null) return only.api!.listen({ host: config.host, port: config.port });
  const cells = served.map((s) => ({ cell: s.cell!, db: s.db, app: s.api! }));
  for (const c of cells) await c.app.ready();
  const front = cellFront(cells, { adminKey: config.adminKey, log: log.child({ component: "api" }) });
  releasers.pushIntake("api front", () => closeServer(front));
  await new Promise<void>((resolve, reject) => {
    front.once("error", reject);
    front.listen(config.port, config.host, () => {
      front.removeListener("error", reject);
      resolve();
    });
  });
  const { port } = front.address() as { port: number };
  return `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
}

/** Stops a server taking connections and ends the ones it has (as Fastify's forceCloseConnections does). */
function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** The delivery worker of one store: alerts, the dispatcher, the janitor and recoveries. */
async function startWorker(
  s: Served,
  o: {
    config: Readonly<Config>;
    log: Logger;
    tracing: Tracing;
    sender: Sender;
    shard: [number, number] | null;
    workerConcurrency: number;
  },
  releasers: Releasers,
): Promise<Dispatcher> {
  const { db } = s;
  const { config } = o;
  const log = s.cell === null ? o.log : o.log.child({ cell: s.cell });
  const alertSender = new AlertSender(
    db,
    {
      smtpUrl: config.smtpUrl,
      smtpFrom: config.smtpFrom,
      maxPayloadBytes: config.maxPayloadBytes,
      onPublished: () => db.notify(WORK_CHANNEL),
    },
    log.child({ component: "alerts" }),
  );
  releasers.push("alerts", () => alertSender.stop());
  const worker = new Dispatcher(
    db,
    o.sender,
    {
      workerConcurrency: o.workerConcurrency,
      claimBatchSize: config.claimBatchSize,
      claimLoops: config.claimLoops,
      grantCap: config.grantCap,
      leaseMarginSeconds: config.leaseMarginSeconds,
      rateSendJitterMs: config.rateSendJitterMs,
      health: {
        windowSize: config.healthWindow,
        minSamples: config.healthMinSamples,
        maxConsecutiveFailures: config.pauseAfterFailures,
        authFailuresToPause: config.pauseAfterAuthFailures,
      },
      onAlerts: () => alertSender.kick(),
      shard: o.shard,
      userAgent: USER_AGENT,
      tracing: o.tracing,
    },
    log.child({ component: "dispatcher" }),
  );
  releasers.push("dispatcher", () => worker.stop(config.shutdownGraceSeconds * 1000));
  await worker.start();
  alertSender.start();
  releasers.push("janitor", startJanitor(db, config, log.child({ component: "janitor" })));
  releasers.push(
    "recoveries",
    await startRecoveryWorker(
      db,
      { pageSize: config.recoveryPageSize, retentionHours: config.retentionHours },
      log.child({ component: "recovery" }),
    ),
  );
  return worker;
}
