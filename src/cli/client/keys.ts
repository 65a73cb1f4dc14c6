import type { ApiKey } from "../../../sdk/src/index.js";
import { printJson, showList, type Handler } from "./context.js";
import { record, type Column } from "./output.js";

// `sluice keys create|list|revoke`: the calling key's tenant's API keys.

const COLUMNS: Column<ApiKey>[] = [
  { head: "ID", value: (k) => k.id },
  { head: "NAME", value: (k) => k.name },
  { head: "PREFIX", value: (k) => k.prefix },
  { head: "CREATED AT", value: (k) => k.created_at },
];

export const keyCommands = {
  "keys create": async (ctx) => {
    const k = await ctx.sluice.post("/v1/api-keys", { body: { name: ctx.opts.text("name")! } });
    if (ctx.json) return printJson(ctx, k);
    ctx.print(record(k));
    ctx.note("the key is shown this once (Sluice keeps only its hash): store it now");
  },

  "keys list": (ctx) => showList(ctx, "API keys", (query) => ctx.sluice.get("/v1/api-keys", { params: { query } }), COLUMNS),

  "keys revoke": async (ctx) => {
    await ctx.sluice.delete("/v1/api-keys/{id}", { params: { path: { id: ctx.args[0]! } } });
    // 204: no document, so --json prints nothing; the exit code says it worked.
    if (!ctx.json) ctx.print(`revoked ${ctx.args[0]}: it stops working at once`);
  },
} satisfies Record<string, Handler>;
