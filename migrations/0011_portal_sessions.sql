-- Consumer-portal sessions (issue 12): a short-lived link a platform hands its own customer,
-- showing that tenant's destinations (or only some of them), perhaps read-only. Like an API key,
-- only a SHA-256 of the session's token is stored; the token is in the create answer only.

CREATE TABLE portal_sessions (
  id              text PRIMARY KEY,          -- pst_…
  tenant_id       text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  token_hash      text NOT NULL UNIQUE,      -- the lookup of every portal request
  destination_ids text[],                    -- NULL: every destination of the tenant
  read_only       boolean NOT NULL DEFAULT false,
  theme           jsonb NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL
);

-- Expired sessions are kept a day (so their links say "expired", not "unknown"), then deleted
-- by the tenant's next POST /v1/portal-sessions (src/db/queries/portal-sessions.ts).
CREATE INDEX portal_sessions_tenant_expires_idx ON portal_sessions (tenant_id, expires_at);
