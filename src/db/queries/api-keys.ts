import { createHash } from "node:crypto";
import type { Queryable } from "../db.js";
import type { TenantRow } from "./tenants.js";

// API keys: a tenant has one or more, each stored as a SHA-256 of the key (the key itself is shown
// once, when it is made) with an id, a name and a short display prefix. Authentication looks a key
// up by its hash; the API lists, adds and deletes a tenant's keys by id.

export interface ApiKeyRow {
  id: string;
  tenant_id: string;
  name: string;
  /** The key's first characters (keyPrefix), or null for keys made before prefixes were kept. */
  prefix: string | null;
  created_at: Date;
}

const COLUMNS = "id, tenant_id, name, prefix, created_at";

export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/**
 * What may be shown of a key so a user can tell keys apart: its first 8 characters, but never
 * more than a quarter of it (a short hand-picked SLUICE_API_KEY would otherwise be half given
 * away), and nothing for a key under 16 characters. A generated key (sk_ + 32) shows `sk_` + 5.
 */
export function keyPrefix(key: string): string | null {
  const n = Math.min(8, Math.floor(key.length / 4));
  return n >= 4 ? key.slice(0, n) : null;
}

/**
 * Stores a new key of a tenant (hashed) under `id` and `name`; returns its row, or null when the
 * key already exists (of any tenant), which is then left as it is.
 */
export async function insertApiKey(
  q: Queryable,
  k: { id: string; tenantId: string; name: string; key: string },
): Promise<ApiKeyRow | null> {
  const rows = await q.query<ApiKeyRow>(
    `INSERT INTO api_keys (key_hash, id, tenant_id, name, prefix) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (key_hash) DO NOTHING RETURNING ${COLUMNS}`,
    [hashKey(k.key), k.id, k.tenantId, k.name, keyPrefix(k.key)],
  );
  return rows[0] ?? null;
}

/** The key with this value and its tenant, or null: the lookup of every authenticated request. */
export async function findApiKey(q: Queryable, key: string): Promise<{ keyId: string; tenant: TenantRow } | null> {
  const rows = await q.query<TenantRow & { api_key_id: string }>(
    "SELECT k.id AS api_key_id, t.* FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.key_hash = $1",
    [hashKey(key)],
  );
  const row = rows[0];
  if (!row) return null;
  const { api_key_id: keyId, ...tenant } = row;
  return { keyId, tenant };
}

/** A page of a tenant's keys, newest first, after the id `before` (null: from the newest). */
export async function listApiKeys(q: Queryable, tenantId: string, limit: number, before: string | null): Promise<ApiKeyRow[]> {
  return q.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys WHERE tenant_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
    [tenantId, before, limit],
  );
}

/**
 * Inside a transaction: waits for, then holds until it ends, the right to delete keys of the
 * tenant, and returns the ids of its keys as they are now. Two deletes of a tenant's last two
 * keys run one after the other, so the second sees that only one is left. (NO KEY UPDATE: it does
 * not block inserts that reference the tenant, such as new keys and destinations.)
 */
export async function lockApiKeys(q: Queryable, tenantId: string): Promise<string[]> {
  await q.query("SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE", [tenantId]);
  const rows = await q.query<{ id: string }>("SELECT id FROM api_keys WHERE tenant_id = $1", [tenantId]);
  return rows.map((r) => r.id);
}

/** Deletes one key of a tenant; true when it existed. */
export async function deleteApiKey(q: Queryable, tenantId: string, id: string): Promise<boolean> {
  const rows = await q.query<{ id: string }>("DELETE FROM api_keys WHERE tenant_id = $1 AND id = $2 RETURNING id", [tenantId, id]);
  return rows.length > 0;
}
