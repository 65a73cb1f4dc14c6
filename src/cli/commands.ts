import { CLI_COMMANDS, SETTINGS, type CliCommand } from "../config.js";
import { VERSION } from "../package-root.js";

// The command table: every command and subcommand with its arguments and options. main.ts parses
// the command line against it and writes each --help from it; the settings' flags (config.ts
// SETTINGS) are added to the commands that run Sluice itself.

export interface OptionSpec {
  type: "string" | "boolean";
  /** The value's placeholder in help (`--limit N`). */
  arg?: string;
  doc: string;
  /** May be given more than once (`--set a=1 --set b=2`). */
  multiple?: boolean;
  /** Refused (exit 2) when missing. */
  required?: boolean;
}

export interface CommandSpec {
  summary: string;
  /** The positional arguments after the command, in capitals when required (`ID`). */
  args?: string;
  options?: Record<string, OptionSpec>;
  /** Two-level commands (`sluice destinations list`): each subcommand has its own args and options. */
  subcommands?: Record<string, CommandSpec>;
  /** One command line that shows it in use, for --help and docs/cli.md. */
  example?: string;
}

/** Options as given: strings for valued ones (lists for repeatable ones), true for switches. */
export type Values = { help?: boolean; version?: boolean } & Record<string, string | boolean | string[] | undefined>;

/** A mistake on the command line: printed as is, exit code 2. */
export class UsageError extends Error {}

/** A command that ran and failed (the API refused, Sluice was unreachable): printed as is, exit code 1. */
export class CommandFailed extends Error {}

const SHARD = { type: "string", arg: "I/N", doc: "serve only destinations whose id hashes to slice I of N" } as const;

const SERVER_COMMANDS: Record<CliCommand, CommandSpec> = {
  start: { summary: "API and delivery workers in one process (the default)", options: { shard: SHARD } },
  api: { summary: "the HTTP API only" },
  worker: { summary: "delivery workers only (run any number against one DATABASE_URL)", options: { shard: SHARD } },
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

// The API client's options, on every subcommand that calls the API. The Sluice URL is --api-url,
// not --url: `destinations create --url` is the destination's.
const CONNECTION: Record<string, OptionSpec> = {
  "api-url": { type: "string", arg: "URL", doc: "where Sluice's API listens (SLUICE_URL; default http://127.0.0.1:3000)" },
  "api-key": { type: "string", arg: "KEY", doc: "a tenant's API key (SLUICE_API_KEY)" },
  json: { type: "boolean", doc: "print the API's JSON answer, one document, for scripts" },
};
const LIST: Record<string, OptionSpec> = {
  limit: { type: "string", arg: "N", doc: "items per page, 1–1000 (default 100)" },
  cursor: { type: "string", arg: "CURSOR", doc: "start at this page (the next_cursor of the previous one)" },
  all: { type: "boolean", doc: "every page, following next_cursor" },
};
const TIME = "15m|2h|RFC 3339";

/** A subcommand that calls the API: its own options, then the connection's. */
const call = (spec: CommandSpec): CommandSpec => ({ ...spec, options: { ...spec.options, ...CONNECTION } });
const list = (spec: CommandSpec): CommandSpec => call({ ...spec, options: { ...spec.options, ...LIST } });

// Flow-control and other fields as options; `--set field=json` reaches every field of the API.
const DESTINATION_FIELDS: Record<string, OptionSpec> = {
  name: { type: "string", arg: "NAME", doc: "a label for people" },
  "event-types": { type: "string", arg: "a,b", doc: "event types it receives, order.* for a prefix (default: every type)" },
  "max-concurrency": { type: "string", arg: "N", doc: "most deliveries in flight to it at once" },
  "rate-per-second": { type: "string", arg: "N", doc: "rate_limit.max_per_second" },
  "rate-per-minute": { type: "string", arg: "N", doc: "rate_limit.max_per_minute" },
  burst: { type: "string", arg: "N", doc: "rate_limit.burst_capacity" },
  "timeout-seconds": { type: "string", arg: "S", doc: "how long one request may take" },
  adaptive: { type: "string", arg: "on|off", doc: "adaptive pace: Sluice finds the rate it can take from its answers" },
  "pace-min": { type: "string", arg: "N", doc: "adaptive.min_per_second: never slower (merged into its adaptive pace)" },
  "pace-max": { type: "string", arg: "N", doc: "adaptive.max_per_second: never faster" },
  "target-latency-ms": { type: "string", arg: "MS", doc: "adaptive.target_latency_ms: slow down when latency is above it" },
  header: { type: "string", arg: "'NAME: VALUE'", multiple: true, doc: "a header sent on every request (repeatable)" },
  set: {
    type: "string",
    arg: "FIELD=JSON",
    multiple: true,
    doc: "any field of the API, e.g. --set ordered=true --set 'retry_schedule_seconds=[5,60]' (repeatable; a value that is not JSON is a string)",
  },
};

export const CLIENT_GROUPS = {
  destinations: {
    summary: "where events are delivered, and how fast",
    subcommands: {
      list: list({ summary: "the destinations, newest first", example: "sluice destinations list" }),
      get: call({
        summary: "one destination: its settings, status, health and queue",
        args: "ID",
        example: "sluice destinations get dst_…",
      }),
      create: call({
        summary: "create a destination; its signing secret is shown once",
        options: {
          url: { type: "string", arg: "URL", required: true, doc: "where deliveries are POSTed (http or https)" },
          ...DESTINATION_FIELDS,
          secret: { type: "string", arg: "whsec_…", doc: "its signing secret (default: a new one)" },
        },
        example: "sluice destinations create --url https://example.com/hooks --event-types 'order.*' --rate-per-second 10",
      }),
      update: call({
        summary: "change a destination's fields (rate and header options are merged into what it has)",
        args: "ID",
        options: { url: { type: "string", arg: "URL", doc: "where deliveries are POSTed" }, ...DESTINATION_FIELDS },
        example: "sluice destinations update dst_… --max-concurrency 4 --adaptive on --pace-max 200",
      }),
      pause: call({
        summary: "stop delivering to it; deliveries wait",
        args: "ID",
        options: { reason: { type: "string", arg: "TEXT", doc: "why, for people (shown as pause_reason)" } },
        example: "sluice destinations pause dst_… --reason 'receiver maintenance'",
      }),
      resume: call({
        summary: "deliver again; held deliveries are replayed or discarded as its replay_on_resume says",
        args: "ID",
        options: {
          discard: { type: "boolean", doc: "discard the deliveries held while it was paused" },
          replay: { type: "boolean", doc: "deliver them (when replay_on_resume is false)" },
        },
        example: "sluice destinations resume dst_… --discard",
      }),
      recover: call({
        summary: "queue again the dead (or discarded, delivered) deliveries of events in a time range",
        args: "ID",
        options: {
          since: { type: "string", arg: TIME, required: true, doc: "events that occurred at or after this time" },
          until: { type: "string", arg: TIME, doc: "… and before this time (default: now)" },
          statuses: { type: "string", arg: "dead,discarded", doc: "which deliveries: dead, discarded, delivered (default dead,discarded)" },
        },
        example: "sluice destinations recover dst_… --since 2h",
      }),
    },
  },
  events: {
    summary: "publish events and find them",
    subcommands: {
      publish: call({
        summary: "publish an event; its payload from --data, --data-file or stdin",
        options: {
          type: { type: "string", arg: "TYPE", required: true, doc: "the event type, e.g. order.created" },
          data: { type: "string", arg: "JSON", doc: "the payload" },
          "data-file": { type: "string", arg: "FILE", doc: "read the payload from FILE (- for stdin)" },
          "idempotency-key": { type: "string", arg: "KEY", doc: "a repeat with the same key within 24 h answers with the first result" },
          "deliver-at": { type: "string", arg: "RFC 3339", doc: "not delivered before this time" },
          "destination-ids": { type: "string", arg: "a,b", doc: "only these destinations (default: every one whose event_types match)" },
        },
        example: `sluice events publish --type order.created --data '{"id": 42}'`,
      }),
      list: list({
        summary: "events, newest first",
        options: {
          type: { type: "string", arg: "TYPE", doc: "an event type, or a prefix ending in * (order.*)" },
          since: { type: "string", arg: TIME, doc: "events that occurred at or after this time" },
          until: { type: "string", arg: TIME, doc: "… and before this time" },
        },
        example: "sluice events list --type 'order.*' --since 1h",
      }),
      get: call({ summary: "one event, its payload and its deliveries", args: "ID", example: "sluice events get evt_…" }),
    },
  },
  deliveries: {
    summary: "each event's delivery to each destination",
    subcommands: {
      list: list({
        summary: "deliveries, newest first",
        options: {
          destination: { type: "string", arg: "ID", doc: "of this destination" },
          event: { type: "string", arg: "ID", doc: "of this event" },
          status: { type: "string", arg: "STATUS", doc: "queued, held, delivering, retry_scheduled, delivered, dead or discarded" },
        },
        example: "sluice deliveries list --status dead",
      }),
      get: call({ summary: "one delivery and its attempts", args: "ID", example: "sluice deliveries get dlv_…" }),
      retry: call({ summary: "deliver a dead or discarded delivery again", args: "ID", example: "sluice deliveries retry dlv_…" }),
    },
  },
  keys: {
    summary: "this tenant's API keys",
    subcommands: {
      create: call({
        summary: "create another API key; the key is shown once",
        options: { name: { type: "string", arg: "NAME", required: true, doc: "a label to tell keys apart" } },
        example: "sluice keys create --name 'billing service'",
      }),
      list: list({ summary: "the keys' ids, names and prefixes (never the keys)", example: "sluice keys list" }),
      revoke: call({
        summary: "delete a key: it stops working at once (not the last one)",
        args: "ID",
        example: "sluice keys revoke key_…",
      }),
    },
  },
} satisfies Record<string, CommandSpec & { subcommands: Record<string, CommandSpec> }>;

export type ClientGroup = keyof typeof CLIENT_GROUPS;
/** "destinations list", "events publish", …: one per client subcommand. */
export type ClientCommandPath = {
  [G in ClientGroup]: `${G} ${keyof (typeof CLIENT_GROUPS)[G]["subcommands"] & string}`;
}[ClientGroup];

const LISTEN: CommandSpec = {
  summary: "a local receiver for development: verifies each delivery's signature and prints it",
  options: {
    port: { type: "string", arg: "N", doc: "port to listen on (default 4000)" },
    host: { type: "string", arg: "ADDR", doc: "address to listen on (default 127.0.0.1)" },
    secret: { type: "string", arg: "whsec_…", doc: "the destination's signing secret (SLUICE_LISTEN_SECRET)" },
    status: { type: "string", arg: "CODE", doc: "the HTTP status to answer, e.g. 429 or 500 to watch retries (default 200)" },
    "retry-after": { type: "string", arg: "S", doc: "a Retry-After header to send with it" },
  },
  example: "sluice listen --port 4000 --secret whsec_…",
};

/** Cells of DATABASE_URL's database (docs/citus.md): made and moved through the database, not a running Sluice. */
const CELLS: CommandSpec = {
  summary: "cells: whole stores for groups of tenants, in one database or spread over a Citus cluster",
  subcommands: {
    create: {
      summary: "make a cell (a distributed schema on Citus) and migrate it; safe to run again",
      args: "NAME",
      example: "DATABASE_URL=postgres://…/sluice sluice cells create cell_eu1",
    },
    list: {
      summary: "the cells, their tenants and (on Citus) the node each is on",
      options: { json: { type: "boolean", doc: "print JSON, for scripts" } },
      example: "sluice cells list",
    },
    move: {
      summary: "move a cell to another Citus node; it keeps serving while it copies",
      args: "NAME",
      options: {
        to: { type: "string", arg: "HOST:PORT", required: true, doc: "the node to move it to (as sluice cells list names nodes)" },
        mode: { type: "string", arg: "MODE", doc: "force_logical (default: writes go on while it copies), auto or block_writes" },
      },
      example: "sluice cells move cell_eu1 --to 10.0.0.12:5432",
    },
  },
};

export const COMMANDS: Record<string, CommandSpec> = { ...SERVER_COMMANDS, ...CLIENT_GROUPS, cells: CELLS, listen: LISTEN };

export function isServerCommand(name: string): name is CliCommand {
  return (CLI_COMMANDS as readonly string[]).includes(name);
}

export const FLAGGED = SETTINGS.filter((s) => s.flag !== undefined);

function allSpecs(): CommandSpec[] {
  return Object.values(COMMANDS).flatMap((c) => [c, ...Object.values(c.subcommands ?? {})]);
}

/** Every option any command takes, for parseArgs; which command may use which is checked after. */
export const OPTIONS: Record<string, { type: "string" | "boolean"; multiple?: boolean; short?: string }> = {
  ...Object.fromEntries(FLAGGED.map((s) => [s.flag!, { type: "string" as const }])),
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
};
for (const spec of allSpecs()) {
  for (const [name, o] of Object.entries(spec.options ?? {})) {
    const seen = OPTIONS[name];
    // One parse for every command: an option's name must mean one kind of value everywhere.
    if (seen && (seen.type !== o.type || Boolean(seen.multiple) !== Boolean(o.multiple))) {
      throw new Error(`src/cli/commands.ts: --${name} is declared with two different types`);
    }
    OPTIONS[name] = { type: o.type, ...(o.multiple ? { multiple: true } : {}) };
  }
}

/** The command and subcommand named on a command line, as far as they are real ones. */
export function specAt(path: string[]): CommandSpec | undefined {
  const top = COMMANDS[path[0] ?? ""];
  return path.length > 1 ? top?.subcommands?.[path[1]!] : top;
}

/** The flags `path` (a command, or a command and subcommand) takes, as help lines. */
export function optionLines(path: string[]): [string, string][] {
  const command = path[0]!;
  const lines: [string, string][] = isServerCommand(command)
    ? FLAGGED.filter((s) => s.commands === undefined || s.commands.includes(command)).map((s) => {
        const def =
          s.default === undefined ? "" : `, default ${Array.isArray(s.default) ? s.default.join(",") || "none" : String(s.default)}`;
        return [`--${s.flag} ${s.arg ?? "VALUE"}`, `${s.doc} (${s.env}${def})`];
      })
    : [];
  for (const [name, o] of Object.entries(specAt(path)?.options ?? {})) {
    lines.push([`--${name}${o.arg ? ` ${o.arg}` : ""}`, `${o.doc}${o.required ? " (required)" : ""}`]);
  }
  return lines;
}

/** The option names `path` accepts. */
export function allowedOptions(path: string[]): string[] {
  return [...optionLines(path).map(([flag]) => flag.split(" ")[0]!.slice(2)), "help"];
}

function table(rows: [string, string][]): string {
  const width = Math.max(...rows.map(([a]) => a.length)) + 2;
  return rows.map(([a, b]) => `  ${a.padEnd(width)}${b}`).join("\n");
}

/** `destinations create --url URL`: the command, its arguments and required options. */
export function synopsis(path: string[]): string {
  const spec = specAt(path)!;
  const required = Object.entries(spec.options ?? {})
    .filter(([, o]) => o.required)
    .map(([name, o]) => `--${name} ${o.arg ?? "VALUE"}`);
  return [...path, ...(spec.args ? [spec.args] : []), ...required].join(" ");
}

export function usage(): string {
  const common = optionLines(["start"]);
  const groups = Object.entries(CLIENT_GROUPS).map(([name, g]): [string, string] => [
    `${name} ${Object.keys(g.subcommands).join("|")}`,
    g.summary,
  ]);
  return `sluice ${VERSION} — outbound webhooks with per-destination flow control

Usage: sluice <command> [options]      sluice <command> --help for that command's options

Commands:
${table([
  ...CLI_COMMANDS.map((c): [string, string] => [synopsis([c]), SERVER_COMMANDS[c].summary]),
  [`cells ${Object.keys(CELLS.subcommands!).join("|")}`, CELLS.summary],
])}

Calling the API of a running Sluice (SLUICE_URL, SLUICE_API_KEY):
${table([...groups, ["listen", LISTEN.summary]])}

Options of sluice start (flags win over the environment):
${table([...common, ["-h, --help", "this text"], ["--version", "the version"]])}

Settings (environment):
${table(SETTINGS.map((s) => [s.env, s.doc]))}

Client commands (environment):
${table([
  ["SLUICE_URL", "Where the API commands call Sluice (default http://127.0.0.1:3000)."],
  ["SLUICE_API_KEY", "The API key they call it with (the same variable as the setting above)."],
  ["SLUICE_LISTEN_SECRET", "The secret sluice listen verifies signatures with."],
])}
`;
}

/** `sluice destinations --help`: its subcommands. */
export function groupUsage(group: string): string {
  const spec = COMMANDS[group]!;
  const subs = Object.keys(spec.subcommands ?? {});
  return `sluice ${group} <${subs.join("|")}> [options] — ${spec.summary}

Subcommands:
${table(subs.map((s) => [synopsis([group, s]).slice(group.length + 1), spec.subcommands![s]!.summary]))}
${
  group in CLIENT_GROUPS
    ? `
Every subcommand takes:
${table(Object.entries(CONNECTION).map(([name, o]) => [`--${name}${o.arg ? ` ${o.arg}` : ""}`, o.doc]))}
`
    : `
They reach the database named by DATABASE_URL (on Citus, the coordinator) directly.
`
}
sluice ${group} <subcommand> --help lists a subcommand's own options.
`;
}

export function commandUsage(path: string[]): string {
  const spec = specAt(path)!;
  const env = isServerCommand(path[0]!) ? "\nEvery setting can also be given in the environment: sluice --help lists them.\n" : "";
  const example = spec.example ? `\nExample:\n  ${spec.example}\n` : "";
  return `sluice ${synopsis(path)} [options] — ${spec.summary}

Options:
${table([...optionLines(path), ["-h, --help", "this text"]])}
${example}${env}`;
}
