import { pino, type Logger } from "pino";
import pretty from "pino-pretty";
import type { Config } from "./config.js";

// One logger for the CLI: readable coloured lines on a terminal, JSON lines (ISO time, level
// names) for anything that collects logs. SLUICE_LOG_FORMAT forces either.

export interface LoggerOptions {
  /** Where lines go; stdout by default. */
  stream?: NodeJS.WritableStream;
  /** Whether `stream` is a terminal; defaults to process.stdout.isTTY. */
  isTTY?: boolean;
}

// Defence in depth: no line is meant to carry header values or secrets (docs/logs.md), but an
// object logged whole could — a header map, or a Postgres error whose detail "Failing row
// contains (…)" lists every value of a destination row (custom header values, signing secrets).
const REDACT_PATHS = ["headers", "*.headers", "err.detail", "err.cause.detail"];
const REDACTED = "[redacted]";

function censor(value: unknown, path: string[]): unknown {
  if (path[path.length - 1] !== "detail") return REDACTED;
  // Other details ("Key (id)=(…) already exists") name the problem; keep them.
  return typeof value === "string" && value.startsWith("Failing row contains") ? `Failing row contains ${REDACTED}` : value;
}

/** The format `auto` resolves to: pretty iff the output is a terminal. */
export function resolveLogFormat(format: Config["logFormat"], isTTY: boolean): "json" | "pretty" {
  if (format === "auto") return isTTY ? "pretty" : "json";
  return format;
}

export function createLogger(config: Pick<Config, "logLevel" | "logFormat">, opts: LoggerOptions = {}): Logger {
  const isTTY = opts.isTTY ?? process.stdout.isTTY === true;
  const base = { level: config.logLevel, base: { pid: process.pid }, redact: { paths: REDACT_PATHS, censor } };
  if (resolveLogFormat(config.logFormat, isTTY) === "pretty") {
    // A stream in this thread, not a worker transport: nothing to flush or join at exit.
    const stream = pretty({
      colorize: isTTY,
      sync: true,
      destination: opts.stream ?? 1,
      translateTime: "SYS:HH:MM:ss.l",
      ignore: "pid,hostname",
    });
    return pino(base, stream);
  }
  return pino(
    {
      ...base,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    // Synchronous on fd 1, so the last lines before an exit are not lost.
    opts.stream ?? pino.destination({ dest: 1, sync: true }),
  );
}
