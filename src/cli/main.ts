import { parseArgs } from "node:util";
import { pino } from "pino";
import { loadConfig, SETTINGS } from "../config.js";
import { SluiceError } from "../errors.js";
import { run, VERSION } from "../app.js";
import { openDb } from "../db/db.js";
import { migrate } from "../db/migrate.js";
import { auditRate, parseSince } from "./audit.js";

const USAGE = `sluice ${VERSION} — outbound webhooks with per-destination flow control

Usage: sluice <command> [options]

Commands:
  start      API and delivery workers in one process (the default)
  api        the HTTP API only
  worker     delivery workers only (run any number against one DATABASE_URL)
  migrate    apply database migrations and exit
  audit rate --destination ID [--since 15m|RFC 3339] [--jitter-ms 100] [--all]
             attempts per second against the destination's rate limit; exit 1 if any window is over

Options:
  --host ADDR          listen address (SLUICE_HOST, default 127.0.0.1)
  --port N             listen port (SLUICE_PORT, default 3000)
  --data-dir DIR       embedded store folder (SLUICE_DATA_DIR, default ./.sluice)
  --concurrency N      most requests in flight per worker process (SLUICE_WORKER_CONCURRENCY)
  --shard I/N          worker only: serve destinations whose id hashes to slice I of N
  --log-level LEVEL    fatal|error|warn|info|debug|trace|silent
  -h, --help           this text

Settings (environment):
${SETTINGS.map((s) => `  ${s.env.padEnd(32)} ${s.doc}`).join("\n")}
`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      host: { type: "string" }, port: { type: "string" }, "data-dir": { type: "string" },
      concurrency: { type: "string" }, shard: { type: "string" }, "log-level": { type: "string" },
      "metrics-port": { type: "string" }, help: { type: "boolean", short: "h" }, version: { type: "boolean" },
      destination: { type: "string" }, since: { type: "string" }, all: { type: "boolean" }, "jitter-ms": { type: "string" },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const command = positionals[0] ?? "start";
  const { destination: _d, since: _s, all: _a, "jitter-ms": _j, ...flags } = values;
  const config = loadConfig(flags as Record<string, string | undefined>);
  const log = pino({ level: config.logLevel, base: { pid: process.pid } });

  if (command === "migrate") {
    const db = await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
    const applied = await migrate(db);
    await db.close();
    process.stdout.write(applied.length ? `applied: ${applied.join(", ")}\n` : "up to date\n");
    return 0;
  }
  if (command === "audit") {
    if (positionals[1] !== "rate" || !values.destination) {
      process.stderr.write("usage: sluice audit rate --destination ID [--since 15m|2h|RFC 3339] [--jitter-ms 100] [--all]\n");
      return 2;
    }
    const since = parseSince(values.since, Date.now());
    const db = await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
    try {
      const jitterMs = values["jitter-ms"] === undefined ? undefined : Number(values["jitter-ms"]);
      if (jitterMs !== undefined && !(Number.isFinite(jitterMs) && jitterMs >= 0)) {
        process.stderr.write(`sluice audit: --jitter-ms takes a number of milliseconds ≥ 0, not '${values["jitter-ms"]}'\n`);
        return 2;
      }
      return await auditRate(db, { destinationId: values.destination, since, all: values.all ?? false, jitterMs }, (l) => process.stdout.write(l + "\n"));
    } finally {
      await db.close();
    }
  }
  if (!["start", "api", "worker"].includes(command)) {
    process.stderr.write(`sluice: unknown command '${command}'\n\n${USAGE}`);
    return 2;
  }
  let shard: [number, number] | null = null;
  if (values.shard !== undefined) {
    const m = /^(\d+)\/(\d+)$/.exec(values.shard);
    if (!m || Number(m[2]) < 1 || Number(m[1]) >= Number(m[2])) {
      process.stderr.write(`sluice: --shard takes I/N with 0 <= I < N (e.g. --shard 3/16), not '${values.shard}'\n`);
      return 2;
    }
    shard = [Number(m[1]), Number(m[2])];
  }

  const running = await run(config, {
    api: command !== "worker",
    worker: command !== "api",
    shard,
    log,
    onGeneratedKey: (key) => {
      process.stdout.write(
        `\n  No SLUICE_API_KEY was set, so Sluice created a default tenant with this API key.\n` +
        `  It is shown once — store it now:\n\n    ${key}\n\n`,
      );
    },
  });
  const store = config.databaseUrl ? "Postgres server" : `embedded Postgres in ${config.dataDir}`;
  log.info({ url: running.url, store, command, shard }, `sluice ${command} ready`);

  await new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (sig: string) => {
      if (++signals > 1) {
        log.warn("second signal: exiting now");
        process.exit(1);
      }
      log.info({ signal: sig }, "stopping: no new claims, finishing in-flight requests");
      void running.stop().then(resolve, (err: unknown) => {
        log.error({ err }, "error while stopping");
        resolve();
      });
    };
    process.once("SIGTERM", () => onSignal("SIGTERM"));
    process.once("SIGINT", () => onSignal("SIGINT"));
  });
  log.info("stopped");
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof SluiceError) process.stderr.write(`sluice: ${err.message}\n`);
    else process.stderr.write(`sluice: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
