-- The dashboard's rollups count each attempt once (src/dispatch/stats-rollup.ts): a pass adds the
-- attempts written since the last one, found by the transaction that wrote them, instead of
-- recounting the last few minutes by start time (every attempt was counted four times, and the
-- stats endpoints counted up to a minute of attempts live on every call).
--
-- xact: the writing transaction's id. Every transaction with an id below a snapshot's xmin has
-- ended, so [the last pass's xmin, this pass's xmin) holds exactly the attempts committed in
-- between, however late a transaction that started earlier commits. Rows written before this
-- migration have none: the first pass after it counts them by start time, as before.
ALTER TABLE attempts ADD COLUMN xact xid8;
ALTER TABLE attempts ALTER COLUMN xact SET DEFAULT pg_current_xact_id();
CREATE INDEX attempts_xact_idx ON attempts (xact) WHERE xact IS NOT NULL;

-- queued_ms: from the event's publish to the attempt's start, so that a pass counts the
-- publish→delivery latency (queued_ms + latency_ms) from the attempt alone; counting it by looking
-- each success's delivery up tripled a pass's cost. Null for rows written before this migration
-- (and probes): those are looked up as before.
ALTER TABLE attempts ADD COLUMN queued_ms int;

-- Every attempt with xact below counted_below is in stats_minutes; null until the first pass that
-- counts by transaction (until then, the rollups reach rolled_until by start time).
ALTER TABLE stats_rollup_state ADD COLUMN counted_below xid8;
