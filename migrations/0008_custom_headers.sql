-- Custom request headers per destination (issue 11): name → value, sent on every request, and
-- the names whose values are secret (masked in API answers; authorization always is).
-- The check is added by name, the name Postgres gives an inline column check: Citus refuses an
-- unnamed constraint in ADD COLUMN.
ALTER TABLE destinations ADD COLUMN headers jsonb NOT NULL DEFAULT '{}';
ALTER TABLE destinations ADD CONSTRAINT destinations_headers_check CHECK (jsonb_typeof(headers) = 'object');
ALTER TABLE destinations ADD COLUMN secret_headers text[] NOT NULL DEFAULT '{}';
