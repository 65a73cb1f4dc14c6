import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Db } from "../../src/db/db.js";
import { getDelivery } from "../../src/db/queries/deliveries.js";
import { heldByReason, scheduledDestinations } from "../../src/db/queries/stats.js";
import { deliveryView } from "../../src/api/serialize.js";
import { currentQuietWindow } from "../../src/policy/quiet-hours.js";
import { HOLD_REASONS } from "../../src/policy/statuses.js";
import { ENGINE_BACKENDS } from "../helpers/sluice.js";
import { withTestStore } from "../helpers/db.js";

// One classification of why a delivery waits: the API's hold_reason (one delivery) and the
// sluice_held gauge (an aggregate over all of them) must agree on the same rows.

const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

interface Dst {
  id: string;
  max_concurrency?: number;
  ordered?: boolean;
  ramp_limit?: number;
  paused?: boolean;
  throttled?: boolean;
  rate_limited?: boolean;
  quiet?: boolean;
}

/** status, attempts, due in seconds from now (negative: past), quiet_hold; in occurred_at order. */
type Dlv = [status: string, attempts: number, dueInS: number, quietHold?: boolean];

async function seed(db: Db, destinations: [Dst, Dlv[]][]): Promise<string[]> {
  const now = Date.now();
  // A quiet window that is open now (in UTC): from 2 minutes ago to an hour from now.
  const schedule = { timezone: "UTC", quiet_start: hhmm(now - 120_000), quiet_end: hhmm(now + 3_600_000) };
  await db.query("INSERT INTO tenants (id, name) VALUES ('ten_1', 't')");
  await db.query("INSERT INTO events (id, tenant_id, type, payload, occurred_at) VALUES ('evt_1', 'ten_1', 'x', '{}', now())");
  const ids: string[] = [];
  let n = 0;
  for (const [d, dls] of destinations) {
    await db.query(
      `INSERT INTO destinations (id, tenant_id, url, secrets, timeout_seconds, max_concurrency, ordered, retry_schedule_seconds,
                                 throttle_schedule_seconds, probe_interval_seconds, replay_on_resume, ramp_limit, paused_at,
                                 pause_cause, throttled_until, rate_limited, delivery_schedule)
       VALUES ($1, 'ten_1', 'http://x', '[]', 5, $2, $3, '{60}', '{60}', 60, true, $4,
               CASE WHEN $5 THEN now() END, CASE WHEN $5 THEN 'manual' END,
               CASE WHEN $6 THEN now() + interval '1 hour' END, $7, $8)`,
      [
        d.id,
        d.max_concurrency ?? 5,
        d.ordered ?? false,
        d.ramp_limit ?? null,
        d.paused ?? false,
        d.throttled ?? false,
        d.rate_limited ?? false,
        d.quiet ? JSON.stringify(schedule) : null,
      ],
    );
    for (const [status, attempts, dueInS, quietHold] of dls) {
      const id = `dlv_${String(++n).padStart(3, "0")}`;
      // In flight: a waiting row with a lease (migrations/0014_leases.sql); its attempt under way is not counted yet.
      const leased = status === "delivering";
      await db.query(
        `INSERT INTO deliveries (destination_id, id, event_id, tenant_id, status, attempts, occurred_at, next_attempt_at, quiet_hold)
         VALUES ($1, $2, 'evt_1', 'ten_1', $3, $4, now() - make_interval(secs => 1000 - $5::int), now() + make_interval(secs => $6::int), $7)`,
        [d.id, id, leased ? "queued" : status, leased ? attempts - 1 : attempts, n, dueInS, quietHold ?? false],
      );
      if (leased) {
        await db.query(
          "INSERT INTO leases (destination_id, delivery_id, token, expires_at) VALUES ($1, $2, gen_random_uuid(), now() + interval '1 minute')",
          [d.id, id],
        );
      }
      ids.push(id);
    }
  }
  return ids;
}

for (const backend of ENGINE_BACKENDS) {
  describe(`hold reasons on ${backend} Postgres`, () => {
    test("the sluice_held aggregate counts each waiting delivery under the hold_reason the API shows", async () => {
      await withTestStore(backend, async (db) => {
        const ids = await seed(db, [
          // paused beats throttled, for due and scheduled deliveries alike
          [
            { id: "dst_paused", paused: true, throttled: true },
            [
              ["queued", 0, -5],
              ["queued", 0, 300],
              ["retry_scheduled", 1, 60],
            ],
          ],
          [
            { id: "dst_throttled", throttled: true, rate_limited: true },
            [
              ["queued", 0, -5],
              ["retry_scheduled", 2, -1],
            ],
          ],
          // quiet hours hold due deliveries whose type they cover; a scheduled one stays "scheduled"
          [
            { id: "dst_quiet", quiet: true, rate_limited: true },
            [
              ["queued", 0, -5, true],
              ["queued", 0, 300, true],
              ["queued", 1, -5, false],
            ],
          ],
          // ordered: everything after the first unfinished (in flight here) is behind it, due or not
          [
            { id: "dst_ordered", ordered: true, rate_limited: true },
            [
              ["delivering", 1, -10],
              ["queued", 0, -5],
              ["retry_scheduled", 1, 120],
              ["queued", 0, 300],
            ],
          ],
          // the first waiting delivery of an ordered destination is not behind anything
          [
            { id: "dst_ordered_idle", ordered: true },
            [
              ["queued", 0, -5],
              ["queued", 0, -4],
            ],
          ],
          // at the cap (and rate-limited): due ones wait for a slot, a retry not yet due is not held
          [
            { id: "dst_full", max_concurrency: 2, rate_limited: true },
            [
              ["delivering", 1, 0],
              ["delivering", 1, 0],
              ["queued", 0, -5],
              ["queued", 2, -1],
              ["retry_scheduled", 1, 90],
            ],
          ],
          // a ramp after a probe caps it below max_concurrency
          [
            { id: "dst_ramp", max_concurrency: 5, ramp_limit: 1 },
            [
              ["delivering", 1, 0],
              ["queued", 0, -5],
            ],
          ],
          [
            { id: "dst_limited", rate_limited: true },
            [
              ["queued", 0, -5],
              ["queued", 3, -5],
              ["retry_scheduled", 1, 90],
            ],
          ],
          [
            { id: "dst_free" },
            [
              ["queued", 0, -5],
              ["delivered", 1, -5],
              ["dead", 3, -5],
            ],
          ],
        ]);

        const api = new Map<string, number>();
        for (const id of ids) {
          const row = (await getDelivery(db, "ten_1", id))!;
          const reason = deliveryView(row).hold_reason;
          if (reason) api.set(reason, (api.get(reason) ?? 0) + 1);
        }
        const quietIds = (await scheduledDestinations(db))
          .filter((d) => currentQuietWindow(d.delivery_schedule, Date.now()) !== null)
          .map((d) => d.id);
        assert.deepEqual(quietIds, ["dst_quiet"]);
        const stats = new Map((await heldByReason(db, quietIds)).map((h) => [h.reason, h.n]));

        assert.deepEqual(Object.fromEntries([...stats].sort()), Object.fromEntries([...api].sort()));
        // Every reason occurs, so a disagreement on any of them would show.
        assert.deepEqual([...api.keys()].sort(), [...HOLD_REASONS].sort());
        assert.deepEqual(Object.fromEntries([...api].sort()), {
          paused: 3,
          throttled: 2,
          quiet_hours: 1,
          scheduled: 2,
          ordering: 3,
          concurrency: 3,
          rate_limited: 3,
        });
      });
    });
  });
}
