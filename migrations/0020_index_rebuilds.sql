-- The janitor's index rebuilds (src/policy/index-rebuild.ts): each index's bytes per entry right
-- after its last rebuild (or when first measured, packed), against which its bloat is read.
CREATE TABLE index_rebuilds (
  index_name      text COLLATE "C" PRIMARY KEY,
  bytes_per_entry float8 NOT NULL CHECK (bytes_per_entry > 0),
  measured_at     timestamptz NOT NULL
);

-- One rebuilding worker at a time, across every process: two REINDEX CONCURRENTLY of one table
-- wait for each other, and a worker drops the invalid copies an interrupted one left behind,
-- which must not be a copy another worker is building. A row lease, not an advisory lock: the
-- rebuild runs outside any transaction (as REINDEX CONCURRENTLY must), where a transaction
-- pooler keeps no session to hold a lock in.
CREATE TABLE index_rebuild_lease (
  id         boolean PRIMARY KEY DEFAULT true CHECK (id),
  expires_at timestamptz NOT NULL
);
INSERT INTO index_rebuild_lease (expires_at) VALUES ('-infinity');
