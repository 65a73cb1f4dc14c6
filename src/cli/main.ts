import { parseArgs } from "node:util";
import type { Logger } from "pino";
import { closestMatch, loadConfig, unknownEnvSettings, type CliCommand, type UnknownSetting } from "../config.js";
import { ConfigError, SluiceError } from "../errors.js";
import { VERSION } from "../package-root.js";
import {
  allowedOptions,
  COMMANDS,
  CommandFailed,
  commandUsage,
  FLAGGED,
  groupUsage,
  isServerCommand,
  OPTIONS,
  specAt,
  synopsis,
  usage,
  UsageError,
  type ClientCommandPath,
  type Values,
} from "./commands.js";

// `sluice <command> [subcommand] [options]`: parses the command line against the command table
// (commands.ts) and runs the command. What runs Sluice, and the API client, are loaded only by the
// commands that use them, so `sluice events list` does not start by loading the whole server.

// Set once the settings are read: stack traces are for debugging, not for a busy port.
let logger: Logger | null = null;
let verbose = ["debug", "trace"].includes(process.env.SLUICE_LOG_LEVEL ?? "");
// SLUICE_* variables that are no setting; a misspelt one is often why a setting looks wrong.
let unknown: UnknownSetting[] = [];

/**
 * The command (and subcommand) a command line names, read without parsing it: for suggesting one
 * of that command's options when parsing fails on an unknown one.
 */
function namedPath(argv: string[]): string[] {
  const path: string[] = [];
  for (let i = 0; i < argv.length && path.length < 2; i++) {
    const a = argv[i]!;
    if (a === "--") break;
    if (a.startsWith("-")) {
      // A valued option's value is the next word, unless given as --name=value.
      if (!a.includes("=") && OPTIONS[a.replace(/^-+/, "")]?.type === "string") i++;
      continue;
    }
    path.push(a);
  }
  return specAt(path) ? path : path.slice(0, 1);
}

function parse(argv: string[]): { values: Values; positionals: string[] } {
  try {
    // Only valued options repeat (commands.ts), so a repeated one is a list of strings.
    return parseArgs({ args: argv, allowPositionals: true, options: OPTIONS }) as { values: Values; positionals: string[] };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      const given = /'(-[^']*)'/.exec((err as Error).message)?.[1]?.split("=")[0] ?? "?";
      const path = namedPath(argv);
      const own = specAt(path) ? allowedOptions(path) : [];
      const near = closestMatch(given.replace(/^-+/, ""), own) ?? closestMatch(given.replace(/^-+/, ""), Object.keys(OPTIONS));
      const help = specAt(path) ? `sluice ${path.join(" ")} --help` : "sluice --help";
      throw new UsageError(`unknown option ${given}${near ? `; did you mean --${near}?` : ""} (${help} lists the options)`);
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

/** The command and subcommand named, checked against the table; the remaining positionals. */
function resolve(positionals: string[], help: boolean): { path: string[]; args: string[] } | { help: string } {
  const command = positionals[0] ?? "start";
  const spec = COMMANDS[command];
  if (!spec) {
    const near = closestMatch(command, Object.keys(COMMANDS));
    throw new UsageError(`unknown command '${command}'${near ? `; did you mean '${near}'?` : ""} (sluice --help lists the commands)`);
  }
  if (!spec.subcommands) return { path: [command], args: positionals.slice(1) };
  const names = Object.keys(spec.subcommands);
  const sub = positionals[1];
  if (sub === undefined) {
    if (help) return { help: groupUsage(command) };
    throw new UsageError(`sluice ${command} needs a subcommand: ${names.join(", ")} (sluice ${command} --help says what each does)`);
  }
  if (!spec.subcommands[sub]) {
    const near = closestMatch(sub, names);
    throw new UsageError(
      `unknown subcommand '${sub}' of sluice ${command}${near ? `; did you mean '${near}'?` : ""} (sluice ${command} --help lists them)`,
    );
  }
  return { path: [command, sub], args: positionals.slice(2) };
}

/** Refuses what the command does not take: another command's option, a missing one, stray arguments. */
function checkOptions(path: string[], values: Values, args: string[]): void {
  const name = `sluice ${path.join(" ")}`;
  // An option another command takes is a mistake here (e.g. --port for a worker, which serves no API).
  const allowed = allowedOptions(path);
  for (const option of Object.keys(values)) {
    if (option !== "version" && !allowed.includes(option)) {
      const near = closestMatch(option, allowed);
      throw new UsageError(
        `${name} does not take --${option}${near ? `; did you mean --${near}?` : ""} (${name} --help lists its options)`,
      );
    }
  }
  if (isServerCommand(path[0]!)) return; // their positionals are checked where they are used (audit rate)
  const spec = specAt(path)!;
  for (const [option, o] of Object.entries(spec.options ?? {})) {
    if (o.required && values[option] === undefined) throw new UsageError(`${name} needs --${option} ${o.arg ?? "VALUE"} (${name} --help)`);
  }
  const wanted = (spec.args ?? "").split(" ").filter((w) => /^[A-Z]+$/.test(w));
  if (args.length < wanted.length) throw new UsageError(`usage: sluice ${synopsis(path)} [options] (${name} --help)`);
  if (args.length > wanted.length) {
    throw new UsageError(
      `${name} takes ${wanted.length ? `only ${wanted.join(" ")}` : "no arguments"}, not '${args.join(" ")}' (${name} --help)`,
    );
  }
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
  if (positionals[0] === undefined && values.help) {
    process.stdout.write(usage());
    return 0;
  }
  const resolved = resolve(positionals, values.help === true);
  if ("help" in resolved) {
    process.stdout.write(resolved.help);
    return 0;
  }
  const { path, args } = resolved;
  if (values.help) {
    process.stdout.write(commandUsage(path));
    return 0;
  }
  checkOptions(path, values, args);
  if (path[0] === "cells") {
    const { cellsCommand } = await import("./cells.js");
    return cellsCommand(path[1]!, args, values);
  }
  if (path[0] === "listen") {
    const { listen } = await import("./listen.js");
    return listen(values);
  }
  if (!isServerCommand(path[0]!)) {
    const { runClient } = await import("./client/run.js");
    return runClient(path.join(" ") as ClientCommandPath, args, values);
  }
  const command: CliCommand = path[0];
  const [{ openStore, run }, { migrate }, { createLogger }, { auditRate, parseSince }] = await Promise.all([
    import("../app.js"),
    import("../db/migrate.js"),
    import("../logger.js"),
    import("./audit.js"),
  ]);
  const settingFlags = new Set(FLAGGED.map((s) => s.flag!));
  const flags = Object.fromEntries([...settingFlags].map((name) => [name, text(name)]));
  unknown = unknownEnvSettings();
  const config = loadConfig(flags);
  verbose = ["debug", "trace"].includes(config.logLevel);
  const log = createLogger(config);
  logger = log;
  for (const u of unknown) log.warn({ variable: u.name, suggestion: u.suggestion }, describeUnknown(u));

  if (command === "migrate" && config.cells.length > 0) {
    // Each cell SLUICE_CELLS names, one after the other (a new cell: sluice cells create).
    const [{ openDb }, { cellUrl }] = await Promise.all([import("../db/db.js"), import("../db/cell-url.js")]);
    if (!config.databaseUrl) throw new UsageError("sluice migrate: SLUICE_CELLS needs DATABASE_URL, the database that holds the cells");
    for (const cell of config.cells) {
      // Directly, where there is a direct URL beside a pooled one: DDL has no business in a pooler.
      const db = await openDb({ databaseUrl: cellUrl(config.directDatabaseUrl ?? config.databaseUrl, cell), poolSize: 1, cell });
      try {
        const applied = await migrate(db);
        process.stdout.write(`cell ${cell}: ${applied.length ? `applied: ${applied.join(", ")}` : "up to date"}\n`);
      } finally {
        await db.close();
      }
    }
    return 0;
  }
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
  const metricsAt = running.metricsUrl ? { metrics_url: running.metricsUrl } : {};
  const cells = config.cells.length > 0 ? { cells: config.cells } : {};
  log.info({ url: running.url, ...metricsAt, store, ...cells, command, shard }, `sluice ${command} ready`);

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
  if (err instanceof CommandFailed) {
    process.stderr.write(`${e.message}\n`);
    return 1;
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
