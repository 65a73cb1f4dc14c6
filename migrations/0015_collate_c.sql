-- Identifiers, hashes, types and states compare byte by byte (COLLATE "C"), whatever the locale the
-- database was created with. Every index of the hot tables is keyed on such text (destination_id,
-- id, event_id, tenant_id, status), and a btree compares keys many times per insert and lookup. On
-- a server initialised with a language's collation (en_US.UTF-8 from the OS, or ICU: what most
-- servers outside tests are), each comparison went through that collation: `npm run bench:profile`
-- on an ICU en-US server spent 12–25 % more Postgres CPU per delivery than on a C one.
--
-- Nothing visible changes: these values are ASCII identifiers and codes, whose byte order is the
-- order any collation gives them, and equality was byte equality already. Human text (names, URLs,
-- error messages) keeps the database's collation. Every column of one kind is changed, so that a
-- join or comparison between two of them never mixes collations (an index serves a comparison only
-- in its own collation). Indexes on these columns are rebuilt: on a large existing store this
-- migration takes a while and locks each table as it goes.
ALTER TABLE tenants
  ALTER COLUMN id TYPE text COLLATE "C";
ALTER TABLE api_keys
  ALTER COLUMN id TYPE text COLLATE "C",
  ALTER COLUMN tenant_id TYPE text COLLATE "C",
  ALTER COLUMN key_hash TYPE text COLLATE "C",
  ALTER COLUMN prefix TYPE text COLLATE "C";
ALTER TABLE destinations
  ALTER COLUMN id TYPE text COLLATE "C",
  ALTER COLUMN tenant_id TYPE text COLLATE "C",
  ALTER COLUMN health_status TYPE text COLLATE "C",
  ALTER COLUMN pause_cause TYPE text COLLATE "C";
ALTER TABLE events
  ALTER COLUMN id TYPE text COLLATE "C",
  ALTER COLUMN tenant_id TYPE text COLLATE "C",
  ALTER COLUMN type TYPE text COLLATE "C";
ALTER TABLE deliveries
  ALTER COLUMN destination_id TYPE text COLLATE "C",
  ALTER COLUMN id TYPE text COLLATE "C",
  ALTER COLUMN event_id TYPE text COLLATE "C",
  ALTER COLUMN tenant_id TYPE text COLLATE "C",
  ALTER COLUMN status TYPE text COLLATE "C";
ALTER TABLE attempts
  ALTER COLUMN destination_id TYPE text COLLATE "C",
  ALTER COLUMN delivery_id TYPE text COLLATE "C",
  ALTER COLUMN outcome TYPE text COLLATE "C",
  ALTER COLUMN class TYPE text COLLATE "C",
  ALTER COLUMN error_class TYPE text COLLATE "C";
ALTER TABLE leases
  ALTER COLUMN destination_id TYPE text COLLATE "C",
  ALTER COLUMN delivery_id TYPE text COLLATE "C";
ALTER TABLE idempotency_keys
  ALTER COLUMN tenant_id TYPE text COLLATE "C",
  ALTER COLUMN key TYPE text COLLATE "C",
  ALTER COLUMN request_hash TYPE text COLLATE "C";
ALTER TABLE alerts
  ALTER COLUMN id TYPE text COLLATE "C",
  ALTER COLUMN tenant_id TYPE text COLLATE "C",
  ALTER COLUMN destination_id TYPE text COLLATE "C",
  ALTER COLUMN delivery_id TYPE text COLLATE "C",
  ALTER COLUMN event_id TYPE text COLLATE "C",
  ALTER COLUMN type TYPE text COLLATE "C",
  ALTER COLUMN email_state TYPE text COLLATE "C";
ALTER TABLE alert_digests
  ALTER COLUMN destination_id TYPE text COLLATE "C",
  ALTER COLUMN tenant_id TYPE text COLLATE "C",
  ALTER COLUMN state TYPE text COLLATE "C";
ALTER TABLE backlog_samples
  ALTER COLUMN destination_id TYPE text COLLATE "C",
  ALTER COLUMN tenant_id TYPE text COLLATE "C",
  ALTER COLUMN reason TYPE text COLLATE "C";
ALTER TABLE backlog_watches
  ALTER COLUMN destination_id TYPE text COLLATE "C";
ALTER TABLE portal_sessions
  ALTER COLUMN id TYPE text COLLATE "C",
  ALTER COLUMN tenant_id TYPE text COLLATE "C",
  ALTER COLUMN token_hash TYPE text COLLATE "C",
  ALTER COLUMN destination_ids TYPE text[] COLLATE "C";
ALTER TABLE recoveries
  ALTER COLUMN id TYPE text COLLATE "C",
  ALTER COLUMN tenant_id TYPE text COLLATE "C",
  ALTER COLUMN destination_id TYPE text COLLATE "C",
  ALTER COLUMN position_id TYPE text COLLATE "C",
  ALTER COLUMN status TYPE text COLLATE "C",
  ALTER COLUMN statuses TYPE text[] COLLATE "C";
ALTER TABLE stats_minutes
  ALTER COLUMN destination_id TYPE text COLLATE "C",
  ALTER COLUMN tenant_id TYPE text COLLATE "C";
