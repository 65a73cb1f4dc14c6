import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { openDb, type Db } from "../../src/db/db.js";
import { loadMigrations, migrate } from "../../src/db/migrate.js";
import { StartupError } from "../../src/errors.js";
import { createTestDatabase, onServer, openTestStore, withTestStore } from "../helpers/db.js";
import { spawnSluiceCli } from "../helpers/processes.js";
import { BACKENDS, startSluice } from "../helpers/sluice.js";

// Schema safety: migrations apply once however many processes start together, a database
// migrated by a newer Sluice is refused untouched, and CHECK constraints hold the statuses.

const ALL = loadMigrations().map((m) => m.name);

const ledger = (db: Db) => db.query<{ version: number; name: string }>("SELECT version, name FROM sluice_migrations ORDER BY version");

describe("migrate on a Postgres server", () => {
  test("processes migrating one fresh database at once all succeed, and each migration is applied once", async () => {
    const tdb = await createTestDatabase();
    // Separate pools: separate sessions, as separate processes would have.
    const dbs = await Promise.all(Array.from({ length: 4 }, () => openDb({ databaseUrl: tdb.url, poolSize: 1 })));
    try {
      const results = await Promise.all(dbs.map((db) => migrate(db)));
      // One of them applied everything; the others waited on the lock and found nothing to do.
      assert.deepEqual(results.flat().sort(), ALL);
      assert.equal(results.filter((r) => r.length > 0).length, 1, JSON.stringify(results));
      assert.deepEqual(
        (await ledger(dbs[0]!)).map((r) => r.name),
        ALL,
      );
      assert.deepEqual(await migrate(dbs[1]!), [], "a later start has nothing to apply");
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
      await tdb.drop();
    }
  });

  test("on a database whose default collation is a language's (ICU en-US), identifiers and codes still compare bytewise", async () => {
    // 0015_collate_c.sql: btree keys of the hot tables compared through ICU cost 12–25 % more
    // Postgres CPU per delivery. Any text column that is indexed, or names an id, must be "C" —
    // a new table or column that forgets it fails here.
    const tdb = await createTestDatabase({ icuLocale: "en-US" });
    const db = await openDb({ databaseUrl: tdb.url, poolSize: 2 });
    try {
      const [provider] = await db.query<{ p: string }>(
        "SELECT datlocprovider::text AS p FROM pg_database WHERE datname = current_database()",
      );
      assert.equal(provider!.p, "i", "the database collates with ICU");
      await migrate(db);
      const columns = await db.query<{ col: string; coll: string; indexed: boolean }>(
        `SELECT c.relname || '.' || a.attname AS col, coalesce(co.collname, '?') AS coll,
                EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND a.attnum = ANY(i.indkey)) AS indexed
           FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
           LEFT JOIN pg_collation co ON co.oid = a.attcollation
          WHERE n.nspname = current_schema() AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped AND a.attcollation <> 0`,
      );
      const idLike = (col: string) => /\.(id|[a-z_]+_ids?|[a-z_]+_hash|key|type|status|state)$/.test(col);
      const wrong = columns.filter((c) => (c.indexed || idLike(c.col)) && c.coll !== "C").map((c) => `${c.col} (${c.coll})`);
      assert.deepEqual(wrong, [], 'identifier and code columns must be COLLATE "C"');
      assert.ok(columns.filter((c) => c.coll === "C").length >= 40, "the identifier columns were found");
      // Human text keeps the database's collation.
      assert.equal(columns.find((c) => c.col === "destinations.name")?.coll, "default");
    } finally {
      await db.close();
      await tdb.drop();
    }
  });

  test("sluice migrate and sluice start refuse a database migrated by a newer Sluice, naming the migration", async () => {
    const tdb = await createTestDatabase();
    try {
      const db = await openDb({ databaseUrl: tdb.url, poolSize: 1 });
      try {
        await migrate(db);
        await db.query("INSERT INTO sluice_migrations (version, name) VALUES (9999, '9999_future.sql')");
      } finally {
        await db.close();
      }
      const cli = spawnSluiceCli(["migrate"], { DATABASE_URL: tdb.url });
      assert.equal(await cli.exited, 1, cli.output());
      assert.match(
        cli.output(),
        /^sluice: The database was migrated by a newer Sluice: it has migration 9999_future\.sql, which this version does not know/m,
      );
      assert.match(cli.output(), /Upgrade Sluice/);
      assert.doesNotMatch(cli.output(), /\n\s+at /, "no stack trace");

      await assert.rejects(startSluice("server", { databaseUrl: tdb.url }), (err: unknown) => {
        assert.ok(err instanceof StartupError);
        assert.equal(err.code, "SLUICE_STORE_SCHEMA_NEWER");
        return true;
      });
      const rows = await onServer(
        tdb.url,
        async (c) => (await c.query<{ name: string }>("SELECT name FROM sluice_migrations ORDER BY version")).rows,
      );
      assert.deepEqual(
        rows.map((r) => r.name),
        [...ALL, "9999_future.sql"],
        "the ledger is left as it was",
      );
    } finally {
      await tdb.drop();
    }
  });
});

for (const backend of BACKENDS) {
  describe(`migrate on ${backend} Postgres`, () => {
    test("a database with migrations this Sluice does not know is refused and left unchanged", async () => {
      const { db, close } = await openTestStore(backend);
      try {
        // Migrated by a newer Sluice: two migrations beyond ours, one of ours not yet applied by it.
        const older = loadMigrations().slice(0, -1);
        assert.deepEqual(await migrate(db, older), ALL.slice(0, -1));
        await db.query("INSERT INTO sluice_migrations (version, name) VALUES (9998, '9998_next.sql'), (9999, '9999_future.sql')");
        await assert.rejects(migrate(db), (err: unknown) => {
          assert.ok(err instanceof StartupError, String(err));
          assert.equal(err.code, "SLUICE_STORE_SCHEMA_NEWER");
          assert.match(
            err.message,
            /it has migrations 9998_next\.sql, 9999_future\.sql, which this version does not know \(its latest is \d{4}_\w+\.sql\)/,
          );
          assert.match(err.message, /Upgrade Sluice/);
          return true;
        });
        assert.deepEqual(
          (await ledger(db)).map((r) => r.name),
          [...ALL.slice(0, -1), "9998_next.sql", "9999_future.sql"],
          "nothing applied",
        );
      } finally {
        await close();
      }
    });

    test("0014 moves the leases live at the upgrade into the leases table, as they were", async () => {
      const { db, close } = await openTestStore(backend);
      try {
        await migrate(
          db,
          loadMigrations().filter((m) => m.version < 14),
        );
        await db.query("INSERT INTO tenants (id, name) VALUES ('ten_1', 't')");
        await db.query(
          `INSERT INTO destinations (id, tenant_id, url, secrets, timeout_seconds, max_concurrency, ordered, retry_schedule_seconds,
                                     throttle_schedule_seconds, probe_interval_seconds, replay_on_resume)
           VALUES ('dst_1', 'ten_1', 'http://x', '[]', 5, 1, false, '{60}', '{60}', 60, true)`,
        );
        // In flight on its third attempt (two failed before), and one waiting.
        await db.query(
          `INSERT INTO deliveries (destination_id, id, event_id, tenant_id, status, attempts, failures, occurred_at, next_attempt_at,
                                   lease_token, lease_expires_at)
           VALUES ('dst_1', 'dlv_1', 'evt_1', 'ten_1', 'delivering', 3, 2, now(), now(),
                   '00000000-0000-4000-8000-000000000001', now() + interval '1 minute'),
                  ('dst_1', 'dlv_2', 'evt_2', 'ten_1', 'queued', 0, 0, now(), now(), NULL, NULL)`,
        );
        assert.deepEqual(await migrate(db), ["0014_leases.sql", ...ALL.slice(ALL.indexOf("0014_leases.sql") + 1)]);
        const leases = await db.query<{ delivery_id: string; token: string; live: boolean }>(
          "SELECT delivery_id, token::text AS token, expires_at > now() AS live FROM leases",
        );
        assert.deepEqual(leases, [{ delivery_id: "dlv_1", token: "00000000-0000-4000-8000-000000000001", live: true }]);
        const rows = await db.query<{ id: string; status: string; attempts: number }>(
          "SELECT id, status, attempts FROM deliveries ORDER BY id",
        );
        assert.deepEqual(rows, [
          { id: "dlv_1", status: "retry_scheduled", attempts: 2 }, // the attempt under way counts when it ends
          { id: "dlv_2", status: "queued", attempts: 0 },
        ]);
        await assert.rejects(db.query("UPDATE deliveries SET status = 'delivering' WHERE id = 'dlv_2'"), /deliveries_status_check/);
      } finally {
        await close();
      }
    });

    test("CHECK constraints refuse a status Sluice does not know", async () => {
      await withTestStore(backend, async (db) => {
        await db.query("INSERT INTO tenants (id, name) VALUES ('ten_1', 't')");
        await db.query(
          `INSERT INTO destinations (id, tenant_id, url, secrets, timeout_seconds, max_concurrency, ordered, retry_schedule_seconds,
                                     throttle_schedule_seconds, probe_interval_seconds, replay_on_resume)
           VALUES ('dst_1', 'ten_1', 'http://x', '[]', 5, 1, false, '{60}', '{60}', 60, true)`,
        );
        const delivery = (status: string) =>
          db.query(
            `INSERT INTO deliveries (destination_id, id, event_id, tenant_id, status, occurred_at, next_attempt_at)
           VALUES ('dst_1', $1, 'evt_1', 'ten_1', $2, now(), now())`,
            [`dlv_${status}`, status],
          );
        const checkViolation = (constraint: string) => (err: unknown) => {
          const e = err as { code?: string; constraint?: string; message?: string };
          assert.equal(e.code, "23514", String(e.message)); // check_violation
          if (e.constraint !== undefined) assert.equal(e.constraint, constraint);
          return true;
        };
        await delivery("queued");
        await assert.rejects(delivery("queud"), checkViolation("deliveries_status_check"));
        await assert.rejects(
          db.query("UPDATE deliveries SET status = 'held' WHERE id = 'dlv_queued'"),
          checkViolation("deliveries_status_check"),
        );
        await assert.rejects(
          db.query(
            "INSERT INTO attempts (destination_id, delivery_id, attempt_no, started_at, latency_ms, outcome) VALUES ('dst_1', 'dlv_queued', 1, now(), 1, 'ok')",
          ),
          checkViolation("attempts_outcome_check"),
        );
        await assert.rejects(
          db.query("UPDATE destinations SET health_status = 'sick'"),
          checkViolation("destinations_health_status_check"),
        );
        await assert.rejects(db.query("UPDATE destinations SET pause_cause = 'auto'"), checkViolation("destinations_pause_cause_check"));
        await db.query("UPDATE destinations SET pause_cause = NULL, health_status = 'critical'"); // NULL and known values pass
      });
    });
  });
}
