import { parseArgs } from "node:util";
import type { Logger } from "pino";
import { closestMatch, loadConfig, SETTINGS, unknownEnvSettings, type UnknownSetting } from "../config.js";
import { ConfigError, SluiceError } from "../errors.js";
import { openStore, run, VERSION } from "../app.js";
import { migrate } from "../db/migrate.js";
import { createLogger } from "../logger.js";
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
  --metrics-port N     serve /metrics on this port (SLUICE_METRICS_PORT)
  --data-dir DIR       embedded store folder (SLUICE_DATA_DIR, default ./.sluice)
  --concurrency N      most requests in flight per worker process (SLUICE_WORKER_CONCURRENCY)
  --shard I/N          worker only: serve destinations whose id hashes to slice I of N
  --log-level LEVEL    fatal|error|warn|info|debug|trace|silent (SLUICE_LOG_LEVEL)
  --log-format FORMAT  auto|json|pretty (SLUICE_LOG_FORMAT; auto: pretty on a terminal)
  -h, --help           this text

Settings (environment):
${SETTINGS.map((s) => `  ${s.env.padEnd(32)} ${s.doc}`).join("\n")}
`;

const COMMANDS = ["start", "api", "worker", "migrate", "audit"];

const OPTIONS = {
  host: { type: "string" }, port: { type: "string" }, "data-dir": { type: "string" },
  concurrency: { type: "string" }, shard: { type: "string" }, "log-level": { type: "string" }, "log-format": { type: "string" },
  "metrics-port": { type: "string" }, help: { type: "boolean", short: "h" }, version: { type: "boolean" },
  destination: { type: "string" }, since: { type: "string" }, all: { type: "boolean" }, "jitter-ms": { type: "string" },
} as const;

/** A mistake on the command line: printed as is, exit code 2. */
class UsageError extends Error {}

// Set once the settings are read: stack traces are for debugging, not for a busy port.
let logger: Logger | null = null;
let verbose = ["debug", "trace"].includes(process.env.SLUICE_LOG_LEVEL ?? "");
// SLUICE_* variables that are no setting; a misspelt one is often why a setting looks wrong.
let unknown: UnknownSetting[] = [];

function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      const given = /'(-[^']*)'/.exec((err as Error).message)?.[1]?.split("=")[0] ?? "?";
      const near = closestMatch(given.replace(/^-+/, ""), Object.keys(OPTIONS));
      throw new UsageError(`unknown option ${given}${near ? `; did you mean --${near}?` : ""} (sluice --help lists the options)`);
    }
    if (code?.startsWith("ERR_PARSE_ARGS_")) throw new UsageError(`${(err as Error).message} (sluice --help lists the options)`);
    throw err;
  }
}

function describeUnknown(u: UnknownSetting): string {
  return u.suggestion
    ? `${u.name} is not a Sluice setting and is ignored; did you mean ${u.suggestion}?`
    : `${u.name} is not a Sluice setting and is ignored (sluice --help lists the settings)`;
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv);
  if (values["log-level"] !== undefined) verbose = ["debug", "trace"].includes(values["log-level"]);
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const command = positionals[0] ?? "start";
  if (!COMMANDS.includes(command)) {
    const near = closestMatch(command, COMMANDS);
    throw new UsageError(`unknown command '${command}'${near ? `; did you mean '${near}'?` : ""} (sluice --help lists the commands)`);
  }
  const { destination: _d, since: _s, all: _a, "jitter-ms": _j, ...flags } = values;
  unknown = unknownEnvSettings();
  const config = loadConfig(flags as Record<string, string | undefined>);
  verbose = ["debug", "trace"].includes(config.logLevel);
  const log = createLogger(config);
  logger = log;
  for (const u of unknown) log.warn({ variable: u.name, suggestion: u.suggestion }, describeUnknown(u));

  if (command === "migrate") {
    const store = await openStore(config, { command, log });
    try {
      const applied = await migrate(store.db);
      process.stdout.write(applied.length ? `applied: ${applied.join(", ")}\n` : "up to date\n");
    } finally {
      await store.close();
    }
    return 0;
  }
  if (command === "audit") {
    if (positionals[1] !== "rate" || !values.destination) {
      throw new UsageError("usage: sluice audit rate --destination ID [--since 15m|2h|RFC 3339] [--jitter-ms 100] [--all]");
    }
    const jitterMs = values["jitter-ms"] === undefined ? undefined : Number(values["jitter-ms"]);
    if (jitterMs !== undefined && !(Number.isFinite(jitterMs) && jitterMs >= 0)) {
      throw new UsageError(`audit: --jitter-ms takes a number of milliseconds ≥ 0, not '${values["jitter-ms"]}'`);
    }
    let since: Date;
    try {
      since = parseSince(values.since, Date.now());
    } catch (err) {
      throw new UsageError(`audit: ${(err as Error).message}`);
    }
    const store = await openStore(config, { command, log });
    try {
      return await auditRate(store.db, { destinationId: values.destination, since, all: values.all ?? false, jitterMs }, (l) => process.stdout.write(l + "\n"));
    } finally {
      await store.close();
    }
  }
  let shard: [number, number] | null = null;
  if (values.shard !== undefined) {
    const m = /^(\d+)\/(\d+)$/.exec(values.shard);
    if (!m || Number(m[2]) < 1 || Number(m[1]) >= Number(m[2])) {
      throw new UsageError(`--shard takes I/N with 0 <= I < N (e.g. --shard 3/16), not '${values.shard}'`);
    }
    shard = [Number(m[1]), Number(m[2])];
  }

  // Listening from the start: a signal during start-up stops Sluice as soon as it is up (stopping
  // halfway through opening the store or migrating could leave the embedded store damaged).
  let ready = false;
  const signalled = new Promise<string>((resolve) => {
    let signals = 0;
    const onSignal = (sig: string) => {
      if (++signals > 1) {
        log.warn({ signal: sig }, "second signal: exiting now");
        process.exit(1);
      }
      if (!ready) log.info({ signal: sig }, "stopping as soon as start-up finishes; signal again to exit at once");
      resolve(sig);
    };
    process.on("SIGTERM", () => onSignal("SIGTERM"));
    process.on("SIGINT", () => onSignal("SIGINT"));
  });

  const running = await run(config, {
    api: command !== "worker",
    worker: command !== "api",
    command,
    shard,
    log,
    onGeneratedKey: (key) => {
      // stderr: stdout may be a log collector's, and the key is not a log line.
      process.stderr.write(
        `\n  No SLUICE_API_KEY was set, so Sluice created a default tenant with this API key.\n` +
        `  It is shown once — store it now:\n\n    ${key}\n\n`,
      );
    },
  });
  ready = true;
  const store = config.databaseUrl ? running.db.where : `embedded Postgres in ${config.dataDir}`;
  log.info({ url: running.url, store, command, shard }, `sluice ${command} ready`);

  const signal = await signalled;
  log.info({ signal }, "stopping: no new claims, finishing in-flight requests");
  await running.stop().catch((err: unknown) => log.error({ err }, "error while stopping"));
  log.info("stopped");
  return 0;
}

// A promise nobody awaited failed: a bug, but one that must be seen, not a silent crash.
process.on("unhandledRejection", (reason) => {
  if (logger) logger.error({ err: reason }, "unhandled promise rejection (a bug in Sluice: please report it)");
  else process.stderr.write(`sluice: unhandled promise rejection: ${(reason as Error)?.stack ?? String(reason)}\n`);
});

/** One or two lines saying what is wrong; the stack trace only at log level debug or trace. */
function report(err: unknown): number {
  const e = err as Error;
  if (err instanceof UsageError) {
    process.stderr.write(`sluice: ${e.message}\n`);
    return 2;
  }
  if (err instanceof SluiceError) {
    process.stderr.write(`sluice: ${e.message}\n`);
    if (err instanceof ConfigError) for (const u of unknown) process.stderr.write(`sluice: also, ${describeUnknown(u)}\n`);
    if (verbose) process.stderr.write(`${(err.cause as Error | undefined)?.stack ?? e.stack}\n`);
    return err instanceof ConfigError ? 2 : 1;
  }
  if (verbose) process.stderr.write(`sluice: ${e?.stack ?? String(err)}\n`);
  else process.stderr.write(`sluice: ${e?.message ?? String(err)}\n(SLUICE_LOG_LEVEL=debug shows where it happened)\n`);
  return 1;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.exitCode = report(err);
    // A failed start closed what it opened; should anything still hold the process, do not hang.
    setTimeout(() => process.exit(), 2_000).unref();
  },
);
