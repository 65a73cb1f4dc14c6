-- Quiet hours (issue 4) and destination health (issue 5).

-- Whether the destination's quiet hours hold this delivery (its event type is in applies_to and
-- not bypassed). Set at publish; recomputed for waiting deliveries when delivery_schedule changes.
ALTER TABLE deliveries ADD COLUMN quiet_hold boolean NOT NULL DEFAULT false;

ALTER TABLE destinations
  -- the last claim moved ready_at beyond the next second and will look once more in a second
  -- (see src/dispatch/claim.ts: a publish committing during a claim is not lost)
  ADD COLUMN idle_recheck              boolean NOT NULL DEFAULT false,
  -- health: the outcomes of the last N health-counted attempts, '1' success / '0' failure, newest last
  ADD COLUMN health_window             text NOT NULL DEFAULT '',
  ADD COLUMN health_status             text NOT NULL DEFAULT 'healthy',
  ADD COLUMN consecutive_auth_failures int NOT NULL DEFAULT 0,
  -- why it is paused: manual | transient (probed) | permanent (never probed)
  ADD COLUMN pause_cause               text,
  ADD COLUMN next_probe_at             timestamptz,
  -- after a probe brought it back: the concurrency it may use now, rising to max_concurrency
  ADD COLUMN ramp_limit                int,
  ADD COLUMN paused_retention_hours    int NOT NULL DEFAULT 72;

-- The health class of every attempt (success, server_error, timeout, dns, …).
ALTER TABLE attempts ADD COLUMN class text;
CREATE INDEX attempts_destination_time_idx ON attempts (destination_id, started_at);

-- Alerts on health transitions: written in the same transaction as the transition, then
-- published as destination.* events and e-mailed (outbox: none is lost to a crash).
CREATE TABLE alerts (
  id             text PRIMARY KEY,
  tenant_id      text NOT NULL,
  destination_id text NOT NULL,
  type           text NOT NULL,   -- destination.degraded | destination.paused | destination.resumed
  payload        jsonb NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  published_at   timestamptz,     -- the destination.* event exists
  event_id       text,
  email_state    text NOT NULL DEFAULT 'pending', -- pending | sent | skipped | failed
  email_attempts int NOT NULL DEFAULT 0,
  email_error    text
);
CREATE INDEX alerts_pending_idx ON alerts (created_at) WHERE published_at IS NULL OR email_state = 'pending';

-- Bumped with every change to the tenant's destinations, so publishers can keep the routing
-- table in memory and re-read it only when it changed.
ALTER TABLE tenants ADD COLUMN routing_version bigint NOT NULL DEFAULT 0;
