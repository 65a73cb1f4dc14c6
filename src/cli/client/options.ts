import { parseSince } from "../audit.js";
import { UsageError, type Values } from "../commands.js";

// A client command's options, read as the API wants them. A value that cannot be one (a --limit
// that is no number, --data that is no JSON) is a usage error naming the option: exit 2, no request.

export class Options {
  constructor(private readonly values: Values) {}

  text(name: string): string | undefined {
    const v = this.values[name];
    return typeof v === "string" ? v : undefined;
  }

  flag(name: string): boolean {
    return this.values[name] === true;
  }

  /** A repeatable option's values, in the order given. */
  many(name: string): string[] {
    const v = this.values[name];
    return Array.isArray(v) ? v : typeof v === "string" ? [v] : [];
  }

  int(name: string, min: number, max: number): number | undefined {
    const raw = this.text(name);
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (raw.trim() === "" || !Number.isInteger(n) || n < min || n > max) {
      throw new UsageError(`--${name} takes a whole number from ${min} to ${max}, not '${raw}'`);
    }
    return n;
  }

  /** A comma list: `--event-types 'order.*,invoice.paid'`. */
  list(name: string): string[] | undefined {
    const raw = this.text(name);
    if (raw === undefined) return undefined;
    return raw
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
  }

  /** A time as RFC 3339 for the API: given as one, or as a duration back from now (15m, 2h, 1d). */
  time(name: string, nowMs = Date.now()): string | undefined {
    const raw = this.text(name);
    if (raw === undefined) return undefined;
    try {
      return parseSince(raw, nowMs, `--${name}`).toISOString();
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
}

/** JSON text given on the command line (or read from a file): a usage error, not a stack, when it is not JSON. */
export function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new UsageError(`${where} is not JSON (${(err as Error).message}); quote it for the shell, e.g. '{"id": 42}'`);
  }
}

/** `--set field=json`: the value as JSON, or as a string when it is not JSON (`--set name=billing`). */
export function parseAssignment(raw: string): [string, unknown] {
  const eq = raw.indexOf("=");
  if (eq <= 0) throw new UsageError(`--set takes FIELD=VALUE (e.g. --set ordered=true), not '${raw}'`);
  const text = raw.slice(eq + 1);
  let value: unknown = text;
  try {
    value = JSON.parse(text);
  } catch {
    /* not JSON: the text itself */
  }
  return [raw.slice(0, eq).trim(), value];
}

/** `--header 'Name: value'`. */
export function parseHeader(raw: string): [string, string] {
  const colon = raw.indexOf(":");
  if (colon <= 0) throw new UsageError(`--header takes 'NAME: VALUE' (e.g. --header 'X-Team: billing'), not '${raw}'`);
  return [raw.slice(0, colon).trim(), raw.slice(colon + 1).trim()];
}
