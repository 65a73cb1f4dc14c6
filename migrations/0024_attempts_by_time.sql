-- attempts partitioned by started_at (RANGE), so that retention drops a partition whose time has
-- passed instead of deleting its rows one by one. Retention empties attempts by time alone (no
-- attempt is held), and deleting them cost a B-tree delete per row in three indexes, WAL for every
-- row, and indexes that grew to twice their packed size between rebuilds (docs/benchmarks.md,
-- bench:soak). The janitor creates the partitions ahead of time and drops those past retention
-- (src/policy/time-partitions.ts says which); an attempt no partition covers lands in
-- attempts_default, which retention prunes by row as before.
--
-- The rows already stored stay where they are: the table becomes the partition of all time before
-- this migration (attempts_legacy), dropped once retention has passed over all of it. A partitioned
-- table's key must hold its partition key, so started_at joins the primary key; a result written
-- twice (its commit unknown) carries the same start time both times and is still refused as one.
ALTER TABLE attempts RENAME TO attempts_legacy;
ALTER TABLE attempts_legacy DROP CONSTRAINT attempts_pkey;
-- Put back on the partitioned table below, whence every partition has it. (Kept on the old table, Citus
-- matched it by name on the shards and refused to attach the table.)
ALTER TABLE attempts_legacy DROP CONSTRAINT attempts_outcome_check;
ALTER INDEX attempts_started_idx RENAME TO attempts_legacy_started_idx;
ALTER INDEX attempts_destination_time_idx RENAME TO attempts_legacy_destination_time_idx;
ALTER INDEX attempts_xact_idx RENAME TO attempts_legacy_xact_idx;

CREATE TABLE attempts (
  LIKE attempts_legacy INCLUDING DEFAULTS,
  PRIMARY KEY (destination_id, delivery_id, attempt_no, started_at)
) PARTITION BY RANGE (started_at);
CREATE INDEX attempts_started_idx ON attempts (started_at);
CREATE INDEX attempts_destination_time_idx ON attempts (destination_id, started_at);
CREATE INDEX attempts_xact_idx ON attempts (xact) WHERE xact IS NOT NULL;
CREATE TABLE attempts_default PARTITION OF attempts DEFAULT;

-- A worker whose clock runs ahead may have written attempts that start after now: those go to the
-- default partition, and the old table covers all time before now. (One statement for the move:
-- Citus 13.2 sends an INSERT … SELECT … WHERE to a cell's shard with its WHERE mangled. The bound
-- a literal: a cell's node would read now() on its own clock, a moment later than the
-- coordinator's, and the two tables would disagree about where the old one ends.)
DO $$
BEGIN
  EXECUTE format('WITH ahead AS (DELETE FROM attempts_legacy WHERE started_at >= %L RETURNING *) '
                 'INSERT INTO attempts SELECT * FROM ahead', now());
  EXECUTE format('ALTER TABLE attempts ATTACH PARTITION attempts_legacy FOR VALUES FROM (MINVALUE) TO (%L)', now());
END
$$;
ALTER TABLE attempts ADD CONSTRAINT attempts_outcome_check CHECK (outcome IN ('success', 'failure', 'throttled'));
