import type { TenantRow } from "../db/queries/tenants.js";

// The API key → tenant answers of recent requests, kept for a few seconds so that most requests
// skip the lookup. It is kept, not removed, because the lookup is not free: on the embedded store
// one takes ~1 ms of the single PGlite session, and with 16 clients on a 2-core machine the API
// answered GET /v1/tenant about 2.5 times as fast with the cache as without it (POST /v1/events
// 10–70 % faster); on a server it is one more round trip per request.
//
// A deleted key must stop working at once, so entries are dropped, not left to expire:
// - in the process that deleted the key, before its DELETE answers (forget);
// - in every other API process by a notification on API_KEYS_CHANNEL carrying the key's id, sent
//   after the commit; they drop it as soon as it arrives (milliseconds). An empty notification
//   (the LISTEN connection was lost and re-made, so some may have been missed) drops everything.
// A lookup under way while a key is deleted must not put it back afterwards: every forget bumps
// `epoch`, and a lookup's answer is kept only if no forget happened while it ran.
// The TTL remains the backstop for a notification that never arrives (e.g. the store went away
// between the commit and the NOTIFY): a deleted key works for at most TTL_MS more there.

const TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

export interface KeyOwner {
  keyId: string;
  tenant: TenantRow;
}

export class KeyCache {
  /** By SHA-256 of the key, never the key itself. */
  private readonly entries = new Map<string, KeyOwner & { until: number }>();
  private epoch = 0;

  /** The owner of the key hashed `hash`: from the cache when fresh, else from `load` (and then cached). */
  async lookup(hash: string, load: () => Promise<KeyOwner | null>): Promise<KeyOwner | null> {
    const hit = this.entries.get(hash);
    if (hit && hit.until > Date.now()) return hit;
    const epoch = this.epoch;
    const found = await load();
    if (found && epoch === this.epoch) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
      this.entries.set(hash, { ...found, until: Date.now() + TTL_MS });
    } else if (!found) {
      this.entries.delete(hash);
    }
    return found;
  }

  /** Drops the key with this id (deleted): the next request with it is looked up, and refused. */
  forget(keyId: string): void {
    this.epoch++;
    for (const [hash, e] of this.entries) if (e.keyId === keyId) this.entries.delete(hash);
  }

  clear(): void {
    this.epoch++;
    this.entries.clear();
  }
}
