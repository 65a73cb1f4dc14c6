import type { Queryable } from "../db.js";
import { BOOTSTRAP_LOCK, lockKey } from "../advisory-locks.js";

// Tenants: creating one (its API keys are in api-keys.ts), the default tenant, and the lock that
// serialises its creation by several processes starting at once.

export interface TenantRow {
  id: string;
  name: string;
  alert_email: string | null;
  /** The tenant SLUICE_API_KEY belongs to (at most one). */
  is_default: boolean;
  created_at: Date;
  updated_at: Date;
}

/** Creates a tenant (its keys are added with insertApiKey); `isDefault` marks the default tenant. */
export async function insertTenant(
  q: Queryable,
  t: { id: string; name: string; alertEmail: string | null; isDefault?: boolean },
): Promise<TenantRow> {
  const rows = await q.query<TenantRow>("INSERT INTO tenants (id, name, alert_email, is_default) VALUES ($1, $2, $3, $4) RETURNING *", [
    t.id,
    t.name,
    t.alertEmail,
    t.isDefault ?? false,
  ]);
  return rows[0]!;
}

/** The default tenant, or null before the first start of an API. */
export async function defaultTenant(q: Queryable): Promise<TenantRow | null> {
  return (await q.query<TenantRow>("SELECT * FROM tenants WHERE is_default"))[0] ?? null;
}

/** The tenant with this id, or null (the admin key acting for a tenant names it). */
export async function getTenant(q: Queryable, id: string): Promise<TenantRow | null> {
  return (await q.query<TenantRow>("SELECT * FROM tenants WHERE id = $1", [id]))[0] ?? null;
}

/** A page of all tenants, newest first, after the id `before` (null: from the newest). */
export async function listTenants(q: Queryable, limit: number, before: string | null): Promise<TenantRow[]> {
  return q.query<TenantRow>("SELECT * FROM tenants WHERE ($1::text IS NULL OR id < $1) ORDER BY id DESC LIMIT $2", [before, limit]);
}

export async function updateTenant(q: Queryable, id: string, patch: { name?: string; alert_email?: string | null }): Promise<TenantRow> {
  const rows = await q.query<TenantRow>(
    `UPDATE tenants SET name = coalesce($2, name),
            alert_email = CASE WHEN $3::bool THEN $4 ELSE alert_email END, updated_at = now()
      WHERE id = $1 RETURNING *`,
    [id, patch.name ?? null, patch.alert_email !== undefined, patch.alert_email ?? null],
  );
  return rows[0]!;
}

export async function countTenants(q: Queryable): Promise<number> {
  return (await q.query<{ n: number }>("SELECT count(*)::int AS n FROM tenants"))[0]!.n;
}

/** Waits for, then holds until the caller's transaction ends, the lock of default-tenant creation. */
export async function lockBootstrap(q: Queryable): Promise<void> {
  await q.query(`SELECT pg_advisory_xact_lock(${lockKey("$1")})`, [BOOTSTRAP_LOCK]);
}
