-- Custom request headers per destination (issue 11): name → value, sent on every request, and
-- the names whose values are secret (masked in API answers; authorization always is).
ALTER TABLE destinations ADD COLUMN headers jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(headers) = 'object');
ALTER TABLE destinations ADD COLUMN secret_headers text[] NOT NULL DEFAULT '{}';
