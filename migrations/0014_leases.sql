-- Leases apart from the delivery rows (issue 13). A claim used to lease a delivery by rewriting its
-- row (status 'delivering', lease token and expiry): a non-HOT update that added an entry to every
-- index of deliveries, the widest table on the hot path. Now a claim inserts one small row here
-- per delivery and the write-back deletes it as it records the result; the delivery row is written
-- twice in its life (publish, result) instead of three times.
--
-- In flight = a live row here (DESIGN: "in-flight = live leases, not a counter"): a destination's
-- slots are counted from its rows, and an expired row (its worker died) is deleted by the next
-- claim of the destination, which puts the delivery back in line. A leased delivery keeps its
-- waiting status ('queued' or 'retry_scheduled'); the API shows it as 'delivering'. `attempts`
-- counts attempts that ended (recorded, or lost with an expired lease); while leased, the API adds
-- the one under way.
CREATE TABLE leases (
  destination_id text NOT NULL,
  delivery_id    text NOT NULL,
  token          uuid NOT NULL,
  expires_at     timestamptz NOT NULL,
  PRIMARY KEY (destination_id, delivery_id)
);

-- Leases live at the upgrade move over as they are: their results still land.
INSERT INTO leases (destination_id, delivery_id, token, expires_at)
  SELECT destination_id, id, lease_token, lease_expires_at FROM deliveries WHERE status = 'delivering';
UPDATE deliveries SET status = CASE WHEN failures > 0 THEN 'retry_scheduled' ELSE 'queued' END, attempts = attempts - 1
 WHERE status = 'delivering';

DROP INDEX deliveries_leased_idx;
ALTER TABLE deliveries DROP COLUMN lease_token, DROP COLUMN lease_expires_at;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
  CHECK (status IN ('queued', 'retry_scheduled', 'delivered', 'dead', 'discarded'));

-- An event index nothing reads, written on every publish: lookups by id use the primary key,
-- listings (tenant_id, occurred_at, id).
DROP INDEX events_tenant_idx;
