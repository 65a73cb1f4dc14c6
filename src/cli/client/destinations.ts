import type { Destination, paths } from "../../../sdk/src/index.js";
import { UsageError } from "../commands.js";
import { printJson, showList, type ClientContext, type Handler } from "./context.js";
import { parseAssignment, parseHeader } from "./options.js";
import { record, type Column } from "./output.js";

// `sluice destinations list|get|create|update|pause|resume|recover`.

type DestinationCreate = paths["/v1/destinations"]["post"]["requestBody"]["content"]["application/json"];
type DestinationPatch = paths["/v1/destinations/{id}"]["patch"]["requestBody"]["content"]["application/json"];
type RateLimit = NonNullable<Destination["rate_limit"]>;
type RecoverStatus = NonNullable<
  paths["/v1/destinations/{id}/recover"]["post"]["requestBody"]["content"]["application/json"]["statuses"]
>[number];

const COLUMNS: Column<Destination>[] = [
  { head: "ID", value: (d) => d.id },
  { head: "NAME", value: (d) => d.name || "-" },
  { head: "STATUS", value: (d) => d.status },
  { head: "HEALTH", value: (d) => d.health.status },
  { head: "QUEUED", value: (d) => d.queued_events },
  { head: "IN FLIGHT", value: (d) => d.inflight },
  { head: "URL", value: (d) => d.url },
];

function show(ctx: ClientContext, d: Destination): void {
  if (ctx.json) return printJson(ctx, d);
  ctx.print(record(d));
}

/** The fields the options set; rate and header options merge into `current` when given. */
function fieldsFrom(ctx: ClientContext, current?: Destination): DestinationPatch {
  const o = ctx.opts;
  const body: Record<string, unknown> = {};
  const put = (field: string, value: unknown) => {
    if (value !== undefined) body[field] = value;
  };
  put("url", o.text("url"));
  put("name", o.text("name"));
  put("event_types", o.list("event-types"));
  put("max_concurrency", o.int("max-concurrency", 0, 1_000_000));
  put("timeout_seconds", o.int("timeout-seconds", 0, 1_000_000));
  const rate: RateLimit = intFields(ctx, RATE_FIELDS);
  // PATCH replaces rate_limit and headers whole: `--rate-per-minute 100` keeps the per-second limit.
  if (Object.keys(rate).length) body.rate_limit = { ...current?.rate_limit, ...rate };
  const headers = o.many("header").map(parseHeader);
  // Secret header values come back as ••••••, which a PATCH keeps as they are stored.
  if (headers.length) body.headers = { ...current?.headers, ...Object.fromEntries(headers) };
  const adaptive = adaptiveFrom(ctx, current);
  if (adaptive !== undefined) body.adaptive = adaptive;
  for (const [field, value] of o.many("set").map(parseAssignment)) body[field] = value;
  // The API validates every field (unknown ones refused with 422): nothing is checked twice here.
  return body;
}

type Adaptive = NonNullable<Destination["adaptive"]>;

/** Whole-number options that set one field each of an object: field → [option, min, max]. */
type IntFields = Record<string, [option: string, min: number, max: number]>;

const RATE_FIELDS = {
  max_per_second: ["rate-per-second", 0, 1_000_000],
  max_per_minute: ["rate-per-minute", 0, 1_000_000_000],
  burst_capacity: ["burst", 0, 1_000_000],
} satisfies IntFields;

const PACE_BOUNDS = {
  min_per_second: ["pace-min", 1, 1_000_000],
  max_per_second: ["pace-max", 1, 1_000_000],
  target_latency_ms: ["target-latency-ms", 1, 3_600_000],
} satisfies IntFields;

/** The fields of `spec` whose options were given. */
function intFields(ctx: ClientContext, spec: IntFields): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [field, [option, min, max]] of Object.entries(spec)) {
    const n = ctx.opts.int(option, min, max);
    if (n !== undefined) out[field] = n;
  }
  return out;
}

/** Options merged into what the destination has (update reads it first when one is given). */
const MERGED_OPTIONS = [...[RATE_FIELDS, PACE_BOUNDS].flatMap((f) => Object.values(f).map(([option]) => option)), "adaptive"];

/**
 * `adaptive` from --adaptive on|off and its bounds (undefined: not given). PATCH replaces it
 * whole, so a bound alone keeps the others; a bound for a destination whose pace is off needs
 * --adaptive on, rather than switching it on unasked.
 */
function adaptiveFrom(ctx: ClientContext, current?: Destination): Adaptive | null | undefined {
  const o = ctx.opts;
  const mode = o.text("adaptive");
  if (mode !== undefined && mode !== "on" && mode !== "off") throw new UsageError(`--adaptive takes on or off, not '${mode}'`);
  const bounds: Partial<Adaptive> = intFields(ctx, PACE_BOUNDS);
  const given = Object.keys(bounds).length > 0;
  if (mode === "off") {
    if (given) throw new UsageError("--pace-min, --pace-max and --target-latency-ms set adaptive pace: not with --adaptive off");
    return null;
  }
  if (mode === undefined && !given) return undefined;
  const on = current?.adaptive?.enabled ? current.adaptive : null;
  if (mode === undefined && !on) {
    throw new UsageError("adaptive pace is off for this destination: add --adaptive on to turn it on with these bounds");
  }
  return { ...on, ...bounds, enabled: true };
}

const id = (ctx: ClientContext) => ({ params: { path: { id: ctx.args[0]! } } });

export const destinationCommands = {
  "destinations list": (ctx) =>
    showList(ctx, "destinations", (query) => ctx.sluice.get("/v1/destinations", { params: { query } }), COLUMNS),

  "destinations get": async (ctx) => show(ctx, await ctx.sluice.get("/v1/destinations/{id}", id(ctx))),

  "destinations create": async (ctx) => {
    const body = { ...fieldsFrom(ctx), ...(ctx.opts.text("secret") ? { secret: ctx.opts.text("secret") } : {}) } as DestinationCreate;
    const d = await ctx.sluice.post("/v1/destinations", { body });
    show(ctx, d);
    if (!ctx.json && d.secret) ctx.note(`verify its deliveries with this secret, e.g. locally: sluice listen --secret ${d.secret}`);
  },

  "destinations update": async (ctx) => {
    const o = ctx.opts;
    const merges = MERGED_OPTIONS.some((n) => o.text(n) !== undefined) || o.many("header").length > 0;
    const current = merges ? await ctx.sluice.get("/v1/destinations/{id}", id(ctx)) : undefined;
    const body = fieldsFrom(ctx, current);
    if (Object.keys(body).length === 0) {
      throw new UsageError(
        "nothing to change: give --url, --name, --max-concurrency, … or --set FIELD=VALUE (sluice destinations update --help)",
      );
    }
    show(ctx, await ctx.sluice.patch("/v1/destinations/{id}", { ...id(ctx), body }));
  },

  "destinations pause": async (ctx) => {
    const reason = ctx.opts.text("reason");
    const d = await ctx.sluice.post("/v1/destinations/{id}/pause", { ...id(ctx), body: reason === undefined ? {} : { reason } });
    if (ctx.json) return printJson(ctx, d);
    ctx.print(`${d.id}  ${d.status}${d.pause_reason ? ` (${d.pause_reason})` : ""}  queued ${d.queued_events}`);
  },

  "destinations resume": async (ctx) => {
    if (ctx.opts.flag("discard") && ctx.opts.flag("replay")) throw new UsageError("give --discard or --replay, not both");
    const replay = ctx.opts.flag("discard") ? false : ctx.opts.flag("replay") ? true : undefined;
    const d = await ctx.sluice.post("/v1/destinations/{id}/resume", { ...id(ctx), body: replay === undefined ? {} : { replay } });
    if (ctx.json) return printJson(ctx, d);
    const discarded = d.discarded ? `  discarded ${d.discarded}` : "";
    ctx.print(`${d.id}  ${d.status}  queued ${d.queued_events}${discarded}`);
  },

  "destinations recover": async (ctx) => {
    const now = Date.now();
    const until = ctx.opts.time("until", now);
    const statuses = ctx.opts.list("statuses") as RecoverStatus[] | undefined;
    const body = { since: ctx.opts.time("since", now)!, ...(until ? { until } : {}), ...(statuses ? { statuses } : {}) };
    const r = await ctx.sluice.post("/v1/destinations/{id}/recover", { ...id(ctx), body });
    if (ctx.json) return printJson(ctx, r);
    ctx.print(`${r.id}  ${r.deliveries} deliveries to queue again`);
    ctx.note(`the workers queue them page by page; GET /v1/destinations/${ctx.args[0]}/recoveries/${r.id} shows progress`);
  },
} satisfies Record<string, Handler>;
