import type { Db } from "./db/db.js";
import { newApiKey, newId } from "./ids.js";
import { countTenants, defaultTenant, insertTenant, lockBootstrap } from "./db/queries/tenants.js";
import { findApiKey, insertApiKey } from "./db/queries/api-keys.js";
import { placeTenant } from "./db/queries/cell-directory.js";

export interface Bootstrap {
  /** A key made for a new default tenant (no SLUICE_API_KEY): shown once, never stored in clear. */
  generatedKey?: string;
  createdTenantId?: string;
  /** SLUICE_API_KEY was new and became another key of this existing default tenant. */
  addedKeyToTenantId?: string;
}

/** The name SLUICE_API_KEY is listed under (GET /v1/api-keys), so a user sees it comes back at each start. */
const ENV_KEY_NAME = "SLUICE_API_KEY";

/**
 * The default tenant: with SLUICE_API_KEY, that key is made to exist — as a key of the default
 * tenant, which is created if there is none; without, a key is generated on the very first start
 * only and returned so it can be printed once. There is never a second default tenant.
 * A SLUICE_API_KEY deleted through the API is therefore added again by the next start with it set.
 */
export async function ensureDefaultTenant(db: Db, apiKey: string | undefined, cell: string | null = null): Promise<Bootstrap> {
  const boot = await db.tx(async (q) => {
    // Serialise first starts of several processes.
    await lockBootstrap(q);
    const current = await defaultTenant(q);
    if (apiKey) {
      if (await findApiKey(q, apiKey)) return {};
      if (current) {
        await insertApiKey(q, { id: newId("key"), tenantId: current.id, name: ENV_KEY_NAME, key: apiKey });
        return { addedKeyToTenantId: current.id };
      }
      const t = await insertTenant(q, { id: newId("ten"), name: "default", alertEmail: null, isDefault: true });
      await insertApiKey(q, { id: newId("key"), tenantId: t.id, name: ENV_KEY_NAME, key: apiKey });
      return { createdTenantId: t.id };
    }
    // A store with tenants but no default one (its default was renamed before defaults were
    // marked) gets no generated key: nobody asked for one.
    if (current || (await countTenants(q)) > 0) return {};
    const key = newApiKey();
    const t = await insertTenant(q, { id: newId("ten"), name: "default", alertEmail: null, isDefault: true });
    await insertApiKey(q, { id: newId("key"), tenantId: t.id, name: "default", key });
    return { generatedKey: key, createdTenantId: t.id };
  });
  // In a cell, the directory says the default tenant lives there (once; a no-op on later starts).
  if (cell !== null) {
    const t = await defaultTenant(db);
    if (t) await placeTenant(db, t.id, cell);
  }
  return boot;
}
