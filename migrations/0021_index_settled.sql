-- An index's bytes per entry once it has turned over after its last rebuild
-- (src/policy/index-rebuild.ts): one that settles there is left alone, one that goes on growing
-- past it is pinned by held rows and is rebuilt. Null until then, and again after each rebuild.
ALTER TABLE index_rebuilds
  ADD COLUMN settled_bytes_per_entry float8 CHECK (settled_bytes_per_entry > 0),
  ADD COLUMN settled_at timestamptz,
  ADD CONSTRAINT index_rebuilds_settled_both CHECK ((settled_bytes_per_entry IS NULL) = (settled_at IS NULL));
