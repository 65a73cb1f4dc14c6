-- Recovery over a time range and finding events (issue 11).

-- A recovery queues again a destination's finished deliveries whose event occurred in
-- [since, until). Worker processes do it a page at a time (src/dispatch/recovery.ts); the
-- position, the last (occurred_at, id) done, lets any worker resume it after a crash or restart.
CREATE TABLE recoveries (
  id                   text PRIMARY KEY,
  tenant_id            text NOT NULL,
  destination_id       text NOT NULL,
  since                timestamptz NOT NULL,
  until                timestamptz NOT NULL,
  statuses             text[] NOT NULL,
  status               text NOT NULL DEFAULT 'running',
  deliveries           int NOT NULL,          -- matching when the recovery was requested
  requeued             int NOT NULL DEFAULT 0, -- queued again so far
  position_occurred_at timestamptz,           -- NULL: no page done yet
  position_id          text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(), -- the last page: workers take the stalest first
  finished_at          timestamptz,
  CONSTRAINT recoveries_range_check CHECK (until > since),
  -- the final delivery statuses (RECOVERABLE_STATUSES in src/policy/statuses.ts)
  CONSTRAINT recoveries_statuses_check CHECK (cardinality(statuses) > 0 AND statuses <@ ARRAY['dead', 'discarded', 'delivered']::text[])
);
-- RECOVERY_STATUSES in src/policy/statuses.ts (test/integration/recover.test.ts compares them).
ALTER TABLE recoveries ADD CONSTRAINT recoveries_status_check
  CHECK (status IN ('running', 'done'));
-- The workers' pick: running recoveries, the one whose last page is oldest first.
CREATE INDEX recoveries_running_idx ON recoveries (updated_at) WHERE status = 'running';

-- A page of a recovery: one destination's finished deliveries of one status in (occurred_at, id)
-- order, from the position on. Partial: waiting and in-flight deliveries (the hot writes) never
-- enter it; a delivery enters it once, when it finishes (that update already touches every index
-- whose predicate names status). Retention keeps it as small as the finished rows.
CREATE INDEX deliveries_finished_order_idx ON deliveries (destination_id, status, occurred_at, id)
  WHERE status IN ('delivered', 'dead', 'discarded');

-- GET /v1/events: a tenant's events newest first, optionally in a time range ...
CREATE INDEX events_tenant_occurred_idx ON events (tenant_id, occurred_at, id);
-- ... and of one type or a type prefix. COLLATE "C": a prefix is a byte range
-- (type >= 'order.' AND type < 'order/'), which other collations do not keep together.
CREATE INDEX events_tenant_type_idx ON events (tenant_id, type COLLATE "C", occurred_at, id);
