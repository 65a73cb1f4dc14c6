import type { Queryable } from "../db.js";

// The cell directory (docs/citus.md): which cells a database holds, and the cell each tenant
// lives in. Two small tables in the database's public schema, outside every cell, read and
// written through a session of the database itself (their names are schema-qualified, so a
// cell's session reaches them too). On Citus they are reference tables: a copy on every node,
// so a node can read them wherever a cell has moved.

/** A cell as the directory lists it. */
export interface CellRow {
  name: string;
  created_at: Date;
  /** Tenants placed in it. */
  tenants: number;
}

/** Makes the directory's tables when they are missing (on Citus as reference tables). Idempotent. */
export async function ensureDirectory(q: Queryable, citus: boolean): Promise<void> {
  await q.query(`CREATE TABLE IF NOT EXISTS public.sluice_cells (
    name       text PRIMARY KEY CHECK (name ~ '^[a-z_][a-z0-9_]{0,62}$'),
    created_at timestamptz NOT NULL DEFAULT now()
  )`);
  await q.query(`CREATE TABLE IF NOT EXISTS public.sluice_tenant_cells (
    tenant_id  text PRIMARY KEY,
    cell       text NOT NULL REFERENCES public.sluice_cells (name),
    created_at timestamptz NOT NULL DEFAULT now()
  )`);
  if (!citus) return;
  for (const table of ["public.sluice_cells", "public.sluice_tenant_cells"]) {
    const [known] = await q.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_dist_partition WHERE logicalrelid = $1::regclass", [
      table,
    ]);
    if (known?.n === 0) await q.query("SELECT create_reference_table($1)", [table]);
  }
}

/** Lists `name` as a cell (after it is made and migrated); no-op when listed. */
export async function registerCell(q: Queryable, name: string): Promise<void> {
  await q.query("INSERT INTO public.sluice_cells (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", [name]);
}

/** Every listed cell with its tenant count, by name. */
export async function listCells(q: Queryable): Promise<CellRow[]> {
  return q.query<CellRow>(
    `SELECT c.name, c.created_at, (SELECT count(*)::int FROM public.sluice_tenant_cells t WHERE t.cell = c.name) AS tenants
       FROM public.sluice_cells c ORDER BY c.name`,
  );
}

/** True when the directory's tables exist in this database. */
export async function directoryExists(q: Queryable): Promise<boolean> {
  const [row] = await q.query<{ ok: boolean }>("SELECT to_regclass('public.sluice_tenant_cells') IS NOT NULL AS ok");
  return row?.ok === true;
}

/** Records that `tenantId` lives in `cell`; a tenant placed already keeps its cell. Returns its cell. */
export async function placeTenant(q: Queryable, tenantId: string, cell: string): Promise<string> {
  await q.query("INSERT INTO public.sluice_tenant_cells (tenant_id, cell) VALUES ($1, $2) ON CONFLICT (tenant_id) DO NOTHING", [
    tenantId,
    cell,
  ]);
  return (await cellOfTenant(q, tenantId)) ?? cell;
}

/** The cell the tenant lives in, or null when the directory does not know it. */
export async function cellOfTenant(q: Queryable, tenantId: string): Promise<string | null> {
  const [row] = await q.query<{ cell: string }>("SELECT cell FROM public.sluice_tenant_cells WHERE tenant_id = $1", [tenantId]);
  return row?.cell ?? null;
}

/** Where each cell lives on Citus: the node holding its tables (`host:port`), by cell. */
export async function cellNodes(q: Queryable, cells: readonly string[]): Promise<Map<string, string>> {
  const rows = await q.query<{ cell: string; node: string }>(
    `SELECT DISTINCT n.nspname AS cell, s.nodename || ':' || s.nodeport AS node
       FROM citus_shards s JOIN pg_class c ON c.oid = s.table_name JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ANY($1::text[]) AND c.relname = 'sluice_migrations'`,
    [cells],
  );
  return new Map(rows.map((r) => [r.cell, r.node]));
}

/** Tenants placed in each of `cells` (a cell with none is absent). */
export async function cellTenantCounts(q: Queryable, cells: readonly string[]): Promise<Map<string, number>> {
  const rows = await q.query<{ cell: string; n: number }>(
    "SELECT cell, count(*)::int AS n FROM public.sluice_tenant_cells WHERE cell = ANY($1::text[]) GROUP BY cell",
    [cells],
  );
  return new Map(rows.map((r) => [r.cell, r.n]));
}

/** True when this store (a cell's session) knows the token, hashed: an API key or a portal session's. */
export async function tokenKnown(q: Queryable, tokenHash: string): Promise<boolean> {
  const [row] = await q.query<{ ok: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM api_keys WHERE key_hash = $1) OR EXISTS (SELECT 1 FROM portal_sessions WHERE token_hash = $1) AS ok`,
    [tokenHash],
  );
  return row?.ok === true;
}
