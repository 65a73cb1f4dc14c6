import type { Queryable } from "../db.js";
import type { TenantRow } from "./tenants.js";
import { hashKey } from "./api-keys.js";

// Consumer-portal sessions: each a token (stored as its SHA-256, like an API key) that lets a
// tenant's customer see some or all of the tenant's destinations until it expires or is revoked.

export interface PortalThemeRow {
  accent?: string;
  background?: string;
  surface?: string;
  text?: string;
  font_family?: string;
}

export interface PortalSessionRow {
  id: string;
  tenant_id: string;
  /** null = every destination of the tenant. */
  destination_ids: string[] | null;
  read_only: boolean;
  theme: PortalThemeRow;
  created_at: Date;
  expires_at: Date;
}

const COLUMNS = "id, tenant_id, destination_ids, read_only, theme, created_at, expires_at";

/** How long an expired session is kept, so its link is answered "expired" rather than "not known". */
const KEEP_EXPIRED = "interval '1 day'";

/** Stores a session of `token` (hashed) that lasts `ttlSeconds` from now (the store's clock); returns its row. */
export async function insertPortalSession(
  q: Queryable,
  s: {
    id: string;
    tenantId: string;
    token: string;
    destinationIds: string[] | null;
    readOnly: boolean;
    theme: PortalThemeRow;
    ttlSeconds: number;
  },
): Promise<PortalSessionRow> {
  const rows = await q.query<PortalSessionRow>(
    `INSERT INTO portal_sessions (id, tenant_id, token_hash, destination_ids, read_only, theme, expires_at)
     VALUES ($1, $2, $3, $4::text[], $5, $6::jsonb, now() + make_interval(secs => $7)) RETURNING ${COLUMNS}`,
    [s.id, s.tenantId, hashKey(s.token), s.destinationIds, s.readOnly, JSON.stringify(s.theme), s.ttlSeconds],
  );
  return rows[0]!;
}

/**
 * The session of this token and its tenant, or null: the lookup of every portal request.
 * `expired` is judged by the store's clock, the one expires_at was set by.
 */
export async function findPortalSession(
  q: Queryable,
  token: string,
): Promise<{ session: PortalSessionRow; expired: boolean; tenant: TenantRow } | null> {
  const rows = await q.query<
    TenantRow &
      Pick<PortalSessionRow, "destination_ids" | "read_only" | "theme" | "expires_at"> & {
        session_id: string;
        session_created_at: Date;
        expired: boolean;
      }
  >(
    `SELECT s.id AS session_id, s.destination_ids, s.read_only, s.theme, s.created_at AS session_created_at, s.expires_at,
            s.expires_at <= now() AS expired, t.*
       FROM portal_sessions s JOIN tenants t ON t.id = s.tenant_id WHERE s.token_hash = $1`,
    [hashKey(token)],
  );
  const row = rows[0];
  if (!row) return null;
  const { session_id, destination_ids, read_only, theme, session_created_at, expires_at, expired, ...tenant } = row;
  const session = { id: session_id, tenant_id: tenant.id, destination_ids, read_only, theme, created_at: session_created_at, expires_at };
  return { session, expired, tenant };
}

/** One session of a tenant by id, or null. */
export async function getPortalSession(q: Queryable, tenantId: string, id: string): Promise<PortalSessionRow | null> {
  const rows = await q.query<PortalSessionRow>(`SELECT ${COLUMNS} FROM portal_sessions WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rows[0] ?? null;
}

/** Deletes (revokes) one session of a tenant; true when it existed. */
export async function deletePortalSession(q: Queryable, tenantId: string, id: string): Promise<boolean> {
  const rows = await q.query("DELETE FROM portal_sessions WHERE tenant_id = $1 AND id = $2 RETURNING id", [tenantId, id]);
  return rows.length > 0;
}

/** Deletes the tenant's sessions that expired more than a day ago; returns how many. */
export async function pruneExpiredPortalSessions(q: Queryable, tenantId: string): Promise<number> {
  const rows = await q.query(`DELETE FROM portal_sessions WHERE tenant_id = $1 AND expires_at < now() - ${KEEP_EXPIRED} RETURNING id`, [
    tenantId,
  ]);
  return rows.length;
}
