import type { Db } from "./db/db.js";
import { newId } from "./ids.js";
import { countTenants, insertTenant, tenantByKey } from "./db/queries/tenants.js";
import { newApiKey } from "./api/routes/tenants.js";

/**
 * The default tenant: with SLUICE_API_KEY, its key is made to exist; without, a key is
 * generated on the very first start only and returned so it can be printed once.
 */
export async function ensureDefaultTenant(db: Db, apiKey: string | undefined): Promise<{ generatedKey?: string; createdTenantId?: string }> {
  return db.tx(async (q) => {
    // Serialise first starts of several processes.
    await q.query("SELECT pg_advisory_xact_lock(7245002)");
    if (apiKey) {
      if (await tenantByKey(q, apiKey)) return {};
      const t = await insertTenant(q, { id: newId("ten"), name: "default", alertEmail: null }, apiKey);
      return { createdTenantId: t.id };
    }
    if ((await countTenants(q)) > 0) return {};
    const key = newApiKey();
    const t = await insertTenant(q, { id: newId("ten"), name: "default", alertEmail: null }, key);
    return { generatedKey: key, createdTenantId: t.id };
  });
}
