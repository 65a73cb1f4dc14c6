import type { Values } from "./commands.js";
import { CommandFailed, UsageError } from "./commands.js";
import { loadConfig } from "../config.js";
import { openDb, type Db } from "../db/db.js";
import { createCell } from "../db/cells.js";
import { CELL_PLACEHOLDER, cellUrl, hasCellPlaceholder } from "../db/cell-url.js";
import { cellNodes, directoryExists, listCells } from "../db/queries/cell-directory.js";

// `sluice cells create|list|move`: the cells of DATABASE_URL's database (docs/citus.md). They
// talk to the database directly, not to a running Sluice: a cell is made, and moved, before or
// while processes serve it.

export async function cellsCommand(sub: string, args: string[], values: Values): Promise<number> {
  const config = loadConfig({});
  // Behind a pooler, DATABASE_URL names a role per cell ({cell}); the direct URL reaches the database itself.
  const databaseUrl = config.directDatabaseUrl ?? config.databaseUrl;
  if (!databaseUrl) throw new UsageError(`cells ${sub}: set DATABASE_URL to the database (on Citus, the coordinator) that holds the cells`);
  if (hasCellPlaceholder(databaseUrl)) {
    throw new UsageError(
      `cells ${sub}: DATABASE_URL names a role per cell (${CELL_PLACEHOLDER}); set SLUICE_DIRECT_DATABASE_URL to the database itself`,
    );
  }
  const out = (line: string) => process.stdout.write(`${line}\n`);
  if (sub === "create") {
    const name = args[0]!;
    const started = Date.now();
    process.stderr.write(`creating cell ${name}: schema, migrations, directory…\n`);
    const c = await createCell(databaseUrl, name);
    const where = c.node ? ` on node ${c.node}` : "";
    const migrated = c.applied.length ? `${c.applied.length} migrations applied` : "migrations up to date";
    out(`cell ${c.name} ${c.created ? "created" : "exists"}${where}; ${migrated} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    out(`serve it with SLUICE_CELLS=${c.name} (or --cells ${c.name}) beside this DATABASE_URL`);
    return 0;
  }
  const admin = await openDb({ databaseUrl, poolSize: 2 });
  try {
    if (sub === "list") return await list(admin, values, out);
    if (sub === "move") return await move(admin, databaseUrl, args[0]!, values, out);
    throw new UsageError(`unknown subcommand '${sub}' of sluice cells`);
  } finally {
    await admin.close();
  }
}

async function list(admin: Db, values: Values, out: (line: string) => void): Promise<number> {
  const cells = (await directoryExists(admin)) ? await listCells(admin) : [];
  const nodes = admin.citus
    ? await cellNodes(
        admin,
        cells.map((c) => c.name),
      )
    : new Map<string, string>();
  const rows = cells.map((c) => ({
    name: c.name,
    tenants: c.tenants,
    node: nodes.get(c.name) ?? null,
    created_at: c.created_at.toISOString(),
  }));
  if (values.json) {
    out(JSON.stringify({ data: rows }, null, 2));
    return 0;
  }
  if (rows.length === 0) {
    out("no cells yet: sluice cells create NAME makes one");
    return 0;
  }
  const header = ["CELL", "TENANTS", ...(admin.citus ? ["NODE"] : []), "CREATED"];
  const lines = rows.map((r) => [r.name, String(r.tenants), ...(admin.citus ? [r.node ?? "?"] : []), r.created_at]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  for (const l of [header, ...lines])
    out(
      l
        .map((v, i) => v.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    );
  return 0;
}

/**
 * Moves a cell to another node of a Citus cluster (citus_schema_move: every table of the cell,
 * together), printing progress while it copies. Writes go on during the copy with the default
 * mode (logical replication), and pause only for the switch at its end.
 */
async function move(admin: Db, databaseUrl: string, cell: string, values: Values, out: (line: string) => void): Promise<number> {
  if (!admin.citus)
    throw new CommandFailed("sluice cells move: the database is no Citus coordinator; a cell moves only between Citus nodes");
  const to = typeof values.to === "string" ? values.to : "";
  const m = /^(.+):(\d{1,5})$/.exec(to);
  if (!m) throw new UsageError(`cells move: --to takes the node as HOST:PORT (as sluice cells list shows it), not '${to}'`);
  const mode = typeof values.mode === "string" ? values.mode : "force_logical";
  if (!["auto", "force_logical", "block_writes"].includes(mode)) {
    throw new UsageError(`cells move: --mode is auto, force_logical or block_writes, not '${mode}'`);
  }
  const listed = (await directoryExists(admin)) ? (await listCells(admin)).map((c) => c.name) : [];
  if (!listed.includes(cell)) throw new CommandFailed(`sluice cells move: there is no cell ${cell} (sluice cells list shows the cells)`);
  const from = (await cellNodes(admin, [cell])).get(cell) ?? "?";
  if (from === to) {
    out(`cell ${cell} is on ${to} already`);
    return 0;
  }
  const started = Date.now();
  process.stderr.write(`moving cell ${cell} from ${from} to ${to} (${mode})…\n`);
  // A second session reports the copy's progress while the first waits for the move.
  const watcher = await openDb({ databaseUrl: cellUrl(databaseUrl, cell), poolSize: 1 });
  const progress = setInterval(() => {
    watcher
      .query<{ copied: string; total: string }>(
        "SELECT coalesce(sum(target_shard_size), 0)::text AS copied, coalesce(sum(source_shard_size), 0)::text AS total FROM get_rebalance_progress()",
      )
      .then(([p]) => {
        const mb = (b: string | undefined) => (Number(b ?? 0) / 1_048_576).toFixed(1);
        const line = `  ${((Date.now() - started) / 1000).toFixed(0)} s: ${mb(p?.copied)} of ${mb(p?.total)} MB copied`;
        if (process.stderr.isTTY) process.stderr.write(`\r${line}\x1b[K`);
        else process.stderr.write(`${line}\n`);
      })
      .catch(() => undefined);
  }, 2_000);
  try {
    await admin.query("SELECT citus_schema_move($1::regnamespace, $2, $3, $4::citus.shard_transfer_mode)", [
      cell,
      m[1],
      Number(m[2]),
      mode,
    ]);
  } finally {
    clearInterval(progress);
    if (process.stderr.isTTY) process.stderr.write("\r\x1b[K");
    await watcher.close();
  }
  const now = (await cellNodes(admin, [cell])).get(cell) ?? "?";
  out(`cell ${cell} moved from ${from} to ${now} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return 0;
}
