import { readFileSync } from "node:fs";
import type { Event, EventInput } from "../../../sdk/src/index.js";
import { UsageError } from "../commands.js";
import { printJson, showList, type ClientContext, type Handler } from "./context.js";
import { DELIVERY_COLUMNS } from "./deliveries.js";
import { parseJson } from "./options.js";
import { clip, record, table, type Column } from "./output.js";

// `sluice events publish|list|get`.

const COLUMNS: Column<Event>[] = [
  { head: "ID", value: (e) => e.id },
  { head: "TYPE", value: (e) => e.type },
  { head: "OCCURRED AT", value: (e) => e.occurred_at },
  { head: "PAYLOAD", value: (e) => clip(JSON.stringify(e.payload) ?? "-", 60) },
];

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** The payload: --data, --data-file (- for stdin), or stdin when it is not a terminal. */
async function payload(ctx: ClientContext): Promise<unknown> {
  const data = ctx.opts.text("data");
  const file = ctx.opts.text("data-file");
  if (data !== undefined && file !== undefined) throw new UsageError("give --data or --data-file, not both");
  if (data !== undefined) return parseJson(data, "--data");
  if (file !== undefined && file !== "-") {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new UsageError(
        `--data-file ${file}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (err as Error).message}`,
      );
    }
    return parseJson(text, `--data-file ${file}`);
  }
  if (file === undefined && process.stdin.isTTY) {
    throw new UsageError(`the payload is missing: give --data '{"id": 42}', --data-file FILE, or pipe it on stdin`);
  }
  const text = await readStdin();
  if (text.trim() === "") throw new UsageError("stdin was empty: the payload is missing (give --data JSON or --data-file FILE)");
  return parseJson(text, "the payload on stdin");
}

export const eventCommands = {
  "events publish": async (ctx) => {
    const destinationIds = ctx.opts.list("destination-ids");
    const deliverAt = ctx.opts.text("deliver-at");
    const event: EventInput = {
      type: ctx.opts.text("type")!,
      payload: await payload(ctx),
      ...(deliverAt !== undefined ? { deliver_at: ctx.opts.time("deliver-at") } : {}),
      ...(destinationIds ? { destination_ids: destinationIds } : {}),
    };
    const key = ctx.opts.text("idempotency-key");
    const accepted = await ctx.sluice.publish(event, key === undefined ? {} : { idempotencyKey: key });
    if (ctx.json) return printJson(ctx, accepted);
    ctx.print(`${accepted.id}  ${accepted.deliveries} ${accepted.deliveries === 1 ? "delivery" : "deliveries"}`);
  },

  "events list": (ctx) => {
    const now = Date.now();
    // Filters not given stay undefined, which the SDK leaves out of the query.
    const query = { type: ctx.opts.text("type"), since: ctx.opts.time("since", now), until: ctx.opts.time("until", now) };
    return showList(ctx, "events", (page) => ctx.sluice.get("/v1/events", { params: { query: { ...query, ...page } } }), COLUMNS);
  },

  "events get": async (ctx) => {
    const e = await ctx.sluice.get("/v1/events/{id}", { params: { path: { id: ctx.args[0]! } } });
    if (ctx.json) return printJson(ctx, e);
    // The payload as the JSON it is, not flattened like other fields.
    ctx.print(record({ ...e, payload: JSON.stringify(e.payload) }, ["deliveries"]));
    const deliveries = e.deliveries ?? [];
    ctx.print(deliveries.length ? `\n${table(deliveries, DELIVERY_COLUMNS)}` : "\nno deliveries");
  },
} satisfies Record<string, Handler>;
