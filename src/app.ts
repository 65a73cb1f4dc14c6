import { existsSync, readFileSync } from "node:fs";
import http from "node:http";
import type { FastifyInstance } from "fastify";
import { pino, type Logger } from "pino";
import type { Config } from "./config.js";
import { openDb, type Db } from "./db/db.js";
import { migrate } from "./db/migrate.js";
import { buildApi } from "./api/server.js";
import { Dispatcher } from "./dispatch/dispatcher.js";
import { startJanitor } from "./dispatch/janitor.js";
import { Sender } from "./delivery/sender.js";
import { ensureDefaultTenant } from "./bootstrap.js";
import { registry, registerDatabaseGauges } from "./metrics.js";
import { AlertSender } from "./alerts/alerts.js";
import { WORK_CHANNEL } from "./dispatch/dispatcher.js";

export const VERSION: string = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;
export const USER_AGENT = `Sluice/${VERSION} (+https://github.com/sluice-webhooks)`;

export interface RunOptions {
  api: boolean;
  worker: boolean;
  shard?: [number, number] | null;
  log?: Logger;
  /** Called with a generated default-tenant key (first start without SLUICE_API_KEY). */
  onGeneratedKey?: (key: string) => void;
}

export interface Running {
  db: Db;
  url: string | null;
  api: FastifyInstance | null;
  dispatcher: Dispatcher | null;
  stop(): Promise<void>;
}

/** Opens the store, migrates, and starts the API and/or the delivery worker in this process. */
export async function run(config: Readonly<Config>, opts: RunOptions): Promise<Running> {
  const log = opts.log ?? pino({ level: config.logLevel, base: { pid: process.pid } });
  if (!config.databaseUrl && !existsSync(`${config.dataDir}/PG_VERSION`) && !config.dataDir.startsWith("memory://")) {
    log.info({ dataDir: config.dataDir }, "creating the embedded Postgres store (first start only; takes a few seconds)");
  }
  const db = await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: config.dbPoolSize });
  const applied = await migrate(db);
  if (applied.length) log.info({ applied }, "migrations applied");

  if (opts.api) {
    const boot = await ensureDefaultTenant(db, config.apiKey);
    if (boot.generatedKey) opts.onGeneratedKey?.(boot.generatedKey);
  }

  // Whoever serves /metrics reports the database-wide gauges.
  if (opts.api || config.metricsPort !== undefined) registerDatabaseGauges(db);

  let api: FastifyInstance | null = null;
  let metricsServer: http.Server | null = null;
  let url: string | null = null;
  if (opts.api) {
    api = await buildApi({ db, config, log, version: VERSION });
    url = await api.listen({ host: config.host, port: config.port });
  }
  if (config.metricsPort !== undefined) {
    metricsServer = http.createServer((_req, res) => {
      void registry.metrics().then((body) => {
        res.writeHead(200, { "content-type": registry.contentType });
        res.end(body);
      });
    });
    await new Promise<void>((r) => metricsServer!.listen(config.metricsPort, config.host, r));
  }

  let dispatcher: Dispatcher | null = null;
  let sender: Sender | null = null;
  let stopJanitor: (() => void) | null = null;
  let alertSender: AlertSender | null = null;
  if (opts.worker) {
    alertSender = new AlertSender(db, {
      smtpUrl: config.smtpUrl, smtpFrom: config.smtpFrom, maxPayloadBytes: config.maxPayloadBytes,
      onPublished: () => db.notify(WORK_CHANNEL),
    }, log.child({ component: "alerts" }));
    sender = new Sender({
      network: { allowPrivateNetworks: config.allowPrivateNetworks, allowedCidrs: config.allowedCidrs },
      userAgent: USER_AGENT,
      maxSocketsPerOrigin: config.maxSocketsPerOrigin,
    });
    dispatcher = new Dispatcher(db, sender, {
      workerConcurrency: config.workerConcurrency,
      claimBatchSize: config.claimBatchSize,
      claimLoops: config.claimLoops,
      grantCap: config.grantCap,
      leaseMarginSeconds: config.leaseMarginSeconds,
      rateSendJitterMs: config.rateSendJitterMs,
      health: {
        windowSize: config.healthWindow, minSamples: config.healthMinSamples,
        maxConsecutiveFailures: config.pauseAfterFailures, authFailuresToPause: config.pauseAfterAuthFailures,
      },
      onAlerts: () => alertSender?.kick(),
      shard: opts.shard ?? null,
      userAgent: USER_AGENT,
    }, log.child({ component: "dispatcher" }));
    await dispatcher.start();
    alertSender.start();
    stopJanitor = startJanitor(db, config.retentionHours, log.child({ component: "janitor" }));
  }

  let stopping: Promise<void> | null = null;
  return {
    db, url, api, dispatcher,
    stop() {
      stopping ??= (async () => {
        stopJanitor?.();
        if (api) await api.close(); // stop taking requests first
        if (dispatcher) await dispatcher.stop(config.shutdownGraceSeconds * 1000);
        if (alertSender) await alertSender.stop();
        // The dispatcher already waited out the grace period and released what was left.
        if (sender) await sender.destroy();
        if (metricsServer) await new Promise((r) => metricsServer!.close(r));
        await db.close();
      })();
      return stopping;
    },
  };
}
