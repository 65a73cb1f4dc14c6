-- Sluice schema v1. Hot tables (deliveries, attempts) key on destination_id first, so they shard
-- by destination on a distributed Postgres (Citus) without changes.

CREATE TABLE tenants (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  alert_email text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Only a SHA-256 of each key is stored; the key itself is shown once.
CREATE TABLE api_keys (
  key_hash   text PRIMARY KEY,
  tenant_id  text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE destinations (
  id                        text PRIMARY KEY,
  tenant_id                 text NOT NULL REFERENCES tenants (id),
  name                      text NOT NULL DEFAULT '',
  url                       text NOT NULL,
  event_types               text[] NOT NULL DEFAULT '{}',
  -- [{"secret": "whsec_…", "expires_at": null | RFC 3339}], newest first; expired ones are pruned on read
  secrets                   jsonb NOT NULL,
  timeout_seconds           int NOT NULL,
  max_concurrency           int NOT NULL,
  ordered                   boolean NOT NULL,
  rate_limit                jsonb,
  delivery_schedule         jsonb,
  retry_schedule_seconds    int[] NOT NULL,
  throttle_schedule_seconds int[] NOT NULL,
  probe_interval_seconds    int NOT NULL,
  replay_on_resume          boolean NOT NULL,
  -- live state --------------------------------------------------------------------------
  -- The earliest time a dispatcher may find something to do here (a due delivery with a free
  -- slot, a retry coming due, a lease to expire). NULL: nothing to do until an event arrives.
  ready_at                  timestamptz,
  paused_at                 timestamptz,
  pause_reason              text,
  throttled_until           timestamptz,
  throttle_reason           text,
  consecutive_throttles     int NOT NULL DEFAULT 0,
  consecutive_failures      int NOT NULL DEFAULT 0,
  -- token buckets of rate_limit: {"second"|"minute": {"tokens", "atMs"}}; spent in the claim transaction
  bucket_state              jsonb,
  -- the last claim found due work that the token buckets held back
  rate_limited              boolean NOT NULL DEFAULT false,
  deleted_at                timestamptz,
  created_at                timestamptz NOT NULL DEFAULT now(),
  updated_at                timestamptz NOT NULL DEFAULT now()
);
-- Finding work is O(ready destinations): the claim walks this index oldest-first.
CREATE INDEX destinations_ready_idx ON destinations (ready_at) WHERE ready_at IS NOT NULL;
CREATE INDEX destinations_tenant_idx ON destinations (tenant_id, id) WHERE deleted_at IS NULL;

CREATE TABLE events (
  id          text PRIMARY KEY,
  tenant_id   text NOT NULL,
  type        text NOT NULL,
  -- json, not jsonb: kept byte for byte as accepted and spliced into the request body as is
  payload     json NOT NULL,
  occurred_at timestamptz NOT NULL,
  deliver_at  timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_tenant_idx ON events (tenant_id, id);
CREATE INDEX events_created_idx ON events (created_at);

CREATE TABLE deliveries (
  destination_id   text NOT NULL,
  id               text NOT NULL,
  event_id         text NOT NULL,
  tenant_id        text NOT NULL,
  -- queued | retry_scheduled | delivering | delivered | dead | discarded
  status           text NOT NULL,
  attempts         int NOT NULL DEFAULT 0, -- requests started (numbers the attempt rows)
  failures         int NOT NULL DEFAULT 0, -- failed attempts: indexes the retry schedule (429s and crashes spend none)
  occurred_at      timestamptz NOT NULL, -- the event's: the FIFO key
  next_attempt_at  timestamptz NOT NULL,
  lease_token      uuid,
  lease_expires_at timestamptz,
  last_error       text,
  last_status_code int,
  finished_at      timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (destination_id, id)
);
-- Due work of one destination in FIFO order.
CREATE INDEX deliveries_waiting_idx ON deliveries (destination_id, occurred_at, id)
  WHERE status IN ('queued', 'retry_scheduled');
-- When the next waiting delivery of a destination comes due.
CREATE INDEX deliveries_next_idx ON deliveries (destination_id, next_attempt_at)
  WHERE status IN ('queued', 'retry_scheduled');
-- Live leases: in-flight count and lease expiry; there is no counter to leak.
CREATE INDEX deliveries_leased_idx ON deliveries (destination_id, lease_expires_at)
  WHERE status = 'delivering';
CREATE INDEX deliveries_event_idx ON deliveries (event_id);
-- Also serves lookups by id (every API read is tenant-scoped): no separate id index to maintain
-- on each of a delivery's three writes.
CREATE INDEX deliveries_tenant_idx ON deliveries (tenant_id, id);
CREATE INDEX deliveries_finished_idx ON deliveries (finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE attempts (
  destination_id text NOT NULL,
  delivery_id    text NOT NULL,
  attempt_no     int NOT NULL,
  started_at     timestamptz NOT NULL,
  latency_ms     int NOT NULL,
  outcome        text NOT NULL,   -- success | failure | throttled
  status_code    int,
  error_class    text,            -- timeout | connection | dns | tls | blocked | http_4xx | http_5xx | …
  error_message  text,
  response_body  text,            -- at most 1 KiB
  PRIMARY KEY (destination_id, delivery_id, attempt_no)
);
CREATE INDEX attempts_started_idx ON attempts (started_at);

CREATE TABLE idempotency_keys (
  tenant_id  text NOT NULL,
  key        text NOT NULL,
  request_hash text NOT NULL, -- a repeat with another body is refused, not silently answered
  response   jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
