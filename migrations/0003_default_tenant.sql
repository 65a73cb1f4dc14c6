-- The default tenant (the one SLUICE_API_KEY names, or whose key a first start generated) is
-- marked, so that a new SLUICE_API_KEY becomes another key of it instead of a second tenant.
ALTER TABLE tenants ADD COLUMN is_default boolean NOT NULL DEFAULT false;

-- At most one default tenant.
CREATE UNIQUE INDEX tenants_one_default_idx ON tenants (is_default) WHERE is_default;

-- Before this, each new SLUICE_API_KEY made another tenant named 'default': the first is it.
UPDATE tenants SET is_default = true
 WHERE id = (SELECT id FROM tenants WHERE name = 'default' ORDER BY created_at, id LIMIT 1);
