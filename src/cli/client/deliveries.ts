import type { Attempt, Delivery } from "../../../sdk/src/index.js";
import { printJson, showList, type Handler } from "./context.js";
import { clip, record, table, type Column } from "./output.js";

// `sluice deliveries list|get|retry`.

export const DELIVERY_COLUMNS: Column<Delivery>[] = [
  { head: "ID", value: (d) => d.id },
  { head: "STATUS", value: (d) => d.status },
  { head: "ATTEMPTS", value: (d) => d.attempts },
  { head: "EVENT", value: (d) => d.event_id },
  { head: "DESTINATION", value: (d) => d.destination_id },
  { head: "NEXT ATTEMPT", value: (d) => d.next_attempt_at },
  { head: "LAST ERROR", value: (d) => (d.last_error === null ? null : clip(d.last_error, 80)) },
];

const ATTEMPT_COLUMNS: Column<Attempt>[] = [
  { head: "#", value: (a) => a.attempt },
  { head: "STARTED AT", value: (a) => a.started_at },
  { head: "OUTCOME", value: (a) => a.outcome },
  { head: "STATUS", value: (a) => a.status_code },
  { head: "MS", value: (a) => a.latency_ms },
  {
    head: "ERROR",
    value: (a) => (a.error_message === null ? a.error_class : clip(`${a.error_class ?? ""} ${a.error_message}`.trim(), 80)),
  },
];

type Status = Delivery["status"];

export const deliveryCommands = {
  "deliveries list": (ctx) => {
    // Filters not given stay undefined, which the SDK leaves out of the query.
    const query = {
      destination_id: ctx.opts.text("destination"),
      event_id: ctx.opts.text("event"),
      // Checked by the API: a wrong status is a 422 naming the allowed ones.
      status: ctx.opts.text("status") as Status | undefined,
    };
    return showList(
      ctx,
      "deliveries",
      (page) => ctx.sluice.get("/v1/deliveries", { params: { query: { ...query, ...page } } }),
      DELIVERY_COLUMNS,
    );
  },

  "deliveries get": async (ctx) => {
    const path = { params: { path: { id: ctx.args[0]! } } };
    const d = await ctx.sluice.get("/v1/deliveries/{id}", path);
    if (ctx.json) return printJson(ctx, d);
    ctx.print(record(d));
    const attempts = await ctx.sluice.get("/v1/deliveries/{id}/attempts", path);
    ctx.print(attempts.data.length ? `\n${table(attempts.data, ATTEMPT_COLUMNS)}` : "\nno attempts yet");
  },

  "deliveries retry": async (ctx) => {
    const d = await ctx.sluice.post("/v1/deliveries/{id}/retry", { params: { path: { id: ctx.args[0]! } } });
    if (ctx.json) return printJson(ctx, d);
    ctx.print(`${d.id}  ${d.status}`);
  },
} satisfies Record<string, Handler>;
