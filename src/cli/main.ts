import { parseArgs } from "node:util";
import type { Logger } from "pino";
import { CLI_COMMANDS, closestMatch, loadConfig, SETTINGS, unknownEnvSettings, type CliCommand, type UnknownSetting } from "../config.js";
import { ConfigError, SluiceError } from "../errors.js";
import { openStore, run, VERSION } from "../app.js";
import { migrate } from "../db/migrate.js";
import { createLogger } from "../logger.js";
import { auditRate, parseSince } from "./audit.js";

// The commands, and the options each takes beyond the settings' flags (config.ts SETTINGS).
interface CommandSpec {
  summary: string;
  /** Arguments after the command, for the usage line. */
  args?: string;
  options?: Record<string, { type: "string" | "boolean"; arg?: string; doc: string }>;
}

const COMMANDS: Record<CliCommand, CommandSpec> = {
  start: {
    summary: "API and delivery workers in one process (the default)",
    options: { shard: { type: "string", arg: "I/N", doc: "serve only destinations whose id hashes to slice I of N" } },
  },
  api: { summary: "the HTTP API only" },
  worker: {
    summary: "delivery workers only (run any number against one DATABASE_URL)",
    options: { shard: { type: "string", arg: "I/N", doc: "serve only destinations whose id hashes to slice I of N" } },
  },
  migrate: { summary: "apply database migrations and exit" },
  audit: {
    summary: "attempts per second against a destination's rate limit; exit 1 if any window is over",
    args: "rate",
    options: {
      destination: { type: "string", arg: "ID", doc: "the destination to audit (required)" },
      since: { type: "string", arg: "15m|2h|RFC 3339", doc: "from when (default 15m)" },
      "jitter-ms": { type: "string", arg: "MS", doc: "tolerated send-time jitter when judging windows (default 100)" },
      all: { type: "boolean", doc: "list every second, not only those over the limit" },
    },
  },
};

const FLAGGED = SETTINGS.filter((s) => s.flag !== undefined);

/** Every option any command takes, for parseArgs; which command may use which is checked after. */
const OPTIONS = {
  ...Object.fromEntries(FLAGGED.map((s) => [s.flag!, { type: "string" as const }])),
  ...Object.fromEntries(
    Object.values(COMMANDS).flatMap((c) => Object.entries(c.options ?? {}).map(([name, o]) => [name, { type: o.type }])),
  ),
  help: { type: "boolean" as const, short: "h" },
  version: { type: "boolean" as const },
};

/** The flags `command` takes, as help lines. */
function optionLines(command: CliCommand): [string, string][] {
  const lines: [string, string][] = FLAGGED.filter((s) => s.commands === undefined || s.commands.includes(command)).map((s) => {
    const def = s.default === undefined ? "" : `, default ${Array.isArray(s.default) ? s.default.join(",") || "none" : String(s.default)}`;
    return [`--${s.flag} ${s.arg ?? "VALUE"}`, `${s.doc} (${s.env}${def})`];
  });
  for (const [name, o] of Object.entries(COMMANDS[command].options ?? {})) lines.push([`--${name}${o.arg ? ` ${o.arg}` : ""}`, o.doc]);
  return lines;
}

function table(rows: [string, string][]): string {
  const width = Math.max(...rows.map(([a]) => a.length)) + 2;
  return rows.map(([a, b]) => `  ${a.padEnd(width)}${b}`).join("\n");
}

function usage(): string {
  const common = optionLines("start");
  return `sluice ${VERSION} — outbound webhooks with per-destination flow control

Usage: sluice <command> [options]      sluice <command> --help for that command's options

Commands:
${table(CLI_COMMANDS.map((c) => [`${c}${COMMANDS[c].args ? ` ${COMMANDS[c].args}` : ""}`, COMMANDS[c].summary]))}

Options of sluice start (flags win over the environment):
${table([...common, ["-h, --help", "this text"], ["--version", "the version"]])}

Settings (environment):
${table(SETTINGS.map((s) => [s.env, s.doc]))}
`;
}

function commandUsage(command: CliCommand): string {
  const spec = COMMANDS[command];
  return `sluice ${command}${spec.args ? ` ${spec.args}` : ""} [options] — ${spec.summary}

Options:
${table([...optionLines(command), ["-h, --help", "this text"]])}

Every setting can also be given in the environment: sluice --help lists them.
`;
}

/** A mistake on the command line: printed as is, exit code 2. */
class UsageError extends Error {}

// Set once the settings are read: stack traces are for debugging, not for a busy port.
let logger: Logger | null = null;
let verbose = ["debug", "trace"].includes(process.env.SLUICE_LOG_LEVEL ?? "");
// SLUICE_* variables that are no setting; a misspelt one is often why a setting looks wrong.
let unknown: UnknownSetting[] = [];

/** Options as given: strings for valued ones, true for switches (parseArgs checked the types). */
type Values = { help?: boolean; version?: boolean } & Record<string, string | boolean | undefined>;

function parse(argv: string[]): { values: Values; positionals: string[] } {
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
  const text = (name: string): string | undefined => (typeof values[name] === "string" ? values[name] : undefined);
  const level = text("log-level");
  if (level !== undefined) verbose = ["debug", "trace"].includes(level);
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const given = positionals[0];
  if (given === undefined && values.help) {
    process.stdout.write(usage());
    return 0;
  }
  const command = (given ?? "start") as CliCommand;
  if (!CLI_COMMANDS.includes(command)) {
    const near = closestMatch(command, CLI_COMMANDS);
    throw new UsageError(`unknown command '${command}'${near ? `; did you mean '${near}'?` : ""} (sluice --help lists the commands)`);
  }
  if (values.help) {
    process.stdout.write(commandUsage(command));
    return 0;
  }
  // An option another command takes is a mistake here (e.g. --port for a worker, which serves no API).
  const allowed = new Set(optionLines(command).map(([flag]) => flag.split(" ")[0]!.slice(2)));
  for (const name of Object.keys(values)) {
    if (name !== "help" && name !== "version" && !allowed.has(name)) {
      throw new UsageError(`sluice ${command} does not take --${name} (sluice ${command} --help lists its options)`);
    }
  }
  const settingFlags = new Set(FLAGGED.map((s) => s.flag!));
  const flags = Object.fromEntries([...settingFlags].map((name) => [name, text(name)]));
  unknown = unknownEnvSettings();
  const config = loadConfig(flags);
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
    const destination = text("destination");
    if (positionals[1] !== "rate" || !destination) {
      throw new UsageError("usage: sluice audit rate --destination ID [--since 15m|2h|RFC 3339] [--jitter-ms 100] [--all]");
    }
    const jitter = text("jitter-ms");
    const jitterMs = jitter === undefined ? undefined : Number(jitter);
    if (jitterMs !== undefined && !(Number.isFinite(jitterMs) && jitterMs >= 0)) {
      throw new UsageError(`audit: --jitter-ms takes a number of milliseconds ≥ 0, not '${jitter}'`);
    }
    let since: Date;
    try {
      since = parseSince(text("since"), Date.now());
    } catch (err) {
      throw new UsageError(`audit: ${(err as Error).message}`);
    }
    const store = await openStore(config, { command, log });
    try {
      return await auditRate(store.db, { destinationId: destination, since, all: values.all === true, jitterMs }, (l) =>
        process.stdout.write(l + "\n"),
      );
    } finally {
      await store.close();
    }
  }
  let shard: [number, number] | null = null;
  const shardFlag = text("shard");
  if (shardFlag !== undefined) {
    const m = /^(\d+)\/(\d+)$/.exec(shardFlag);
    if (!m || Number(m[2]) < 1 || Number(m[1]) >= Number(m[2])) {
      throw new UsageError(`--shard takes I/N with 0 <= I < N (e.g. --shard 3/16), not '${shardFlag}'`);
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
