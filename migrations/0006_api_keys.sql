-- Several API keys per tenant (issue 11): each key gets an id (key_…) to list and delete it by, a
-- name, and a short prefix of the key for display. Still only a SHA-256 of the key is stored.

ALTER TABLE api_keys ADD COLUMN id text;
ALTER TABLE api_keys ADD COLUMN name text;
-- The key's first few characters (src/db/queries/api-keys.ts keyPrefix), so a user can tell keys
-- apart. Not a secret: at most a quarter of a key. NULL when unknown.
ALTER TABLE api_keys ADD COLUMN prefix text;

-- Keys made before this: an id of the shape src/ids.ts makes (hex milliseconds of created_at, so
-- they sort by creation like new ones, then 12 hex digits derived from the unique hash), named by
-- where they came from. Their prefix stays NULL: a key cannot be recovered from its hash. The
-- epoch is read from created_at in UTC, the same number, because Citus refuses a STABLE function
-- of a column in an UPDATE and extract() from a timestamptz is STABLE, from a timestamp immutable.
UPDATE api_keys k
   SET id = 'key_' || lpad(to_hex(floor(extract(epoch FROM k.created_at AT TIME ZONE 'UTC') * 1000)::bigint), 12, '0') || '000'
            || substr(md5(k.key_hash), 1, 12),
       name = CASE WHEN t.is_default THEN 'default' ELSE 'initial' END
  FROM tenants t
 WHERE t.id = k.tenant_id;

ALTER TABLE api_keys ALTER COLUMN id SET NOT NULL;
ALTER TABLE api_keys ALTER COLUMN name SET NOT NULL;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_id_key UNIQUE (id);
-- A tenant's keys, newest first (GET /v1/api-keys); the auth lookup stays on the key_hash primary key.
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, id);
