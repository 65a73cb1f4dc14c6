-- Stats for the dashboard (issue 12): per-minute rollups of attempts and per-minute samples of the
-- held backlog, so GET /v1/stats and GET /v1/destinations/{id}/stats read a few rows per
-- destination and minute instead of every attempt. Written by the workers' janitor
-- (src/dispatch/stats-rollup.ts), kept 48 h; see docs/api.md "Stats".

-- One row per destination and minute that had delivery attempts (probes are not counted).
-- Recomputed from attempts for the last few minutes on every pass: a row is replaced, never added to.
CREATE TABLE stats_minutes (
  destination_id text NOT NULL,
  tenant_id      text NOT NULL,
  minute         timestamptz NOT NULL,          -- date_trunc('minute', attempts.started_at)
  delivered      int NOT NULL DEFAULT 0,        -- attempts with outcome 'success'
  failed         int NOT NULL DEFAULT 0,        -- outcome 'failure' (every error class, 410 included)
  rate_limited   int NOT NULL DEFAULT 0,        -- outcome 'throttled': answered 429
  timeouts       int NOT NULL DEFAULT 0,        -- error_class 'timeout' (also counted in failed)
  -- non-success attempts by error_class without its http_ prefix: {"5xx": 3, "429": 1, "timeout": 2}
  by_class       jsonb NOT NULL DEFAULT '{}',
  -- publish→delivery latency of the successes, counts per bucket of src/policy/latency-histogram.ts
  latency_hist   int[] NOT NULL DEFAULT '{}',
  PRIMARY KEY (destination_id, minute)
);
CREATE INDEX stats_minutes_tenant_idx ON stats_minutes (tenant_id, minute);
-- Retention deletes by age alone.
CREATE INDEX stats_minutes_minute_idx ON stats_minutes (minute);

-- Held deliveries by hold reason, sampled once a minute. Per destination rather than per tenant:
-- a consumer-portal session sees only some of a tenant's destinations, and their sum must not
-- include the others. Only destinations holding something get rows (a missing reason is 0).
CREATE TABLE backlog_samples (
  destination_id text NOT NULL,
  tenant_id      text NOT NULL,
  minute         timestamptz NOT NULL,          -- the minute the sample was taken in
  reason         text NOT NULL,                 -- HOLD_REASONS in src/policy/statuses.ts
  n              int NOT NULL,
  oldest_age_s   float8 NOT NULL,               -- age of the oldest held delivery (since its publish)
  PRIMARY KEY (destination_id, minute, reason)
);
CREATE INDEX backlog_samples_tenant_idx ON backlog_samples (tenant_id, minute);
CREATE INDEX backlog_samples_minute_idx ON backlog_samples (minute);

-- How far the rollups reach: every minute before rolled_until has a stats_minutes row if it had
-- attempts. Later minutes are counted from attempts when asked. One row.
CREATE TABLE stats_rollup_state (
  id            boolean PRIMARY KEY DEFAULT true CHECK (id),
  rolled_until  timestamptz NOT NULL
);
