-- delivery.dead (issue 11): a delivery whose retries are spent is an alert too, written to the
-- alerts outbox in the write-back that kills it, published into the tenant's stream and e-mailed
-- in an hourly digest per destination (src/alerts/digest.ts, docs/health.md).

-- SYSTEM_EVENT_TYPES in src/policy/statuses.ts (test/integration/delivery-dead.test.ts compares them).
ALTER TABLE alerts DROP CONSTRAINT alerts_type_check;
ALTER TABLE alerts ADD CONSTRAINT alerts_type_check
  CHECK (type IN ('destination.degraded', 'destination.paused', 'destination.resumed', 'delivery.dead'));

-- The death an alert is about: the delivery, and its attempt count when it died. One row per
-- death whatever happens to the write-back (a retry after a lost commit, a second worker); a
-- delivery retried and dying again has made more attempts, so its new death is a new row.
-- NULL for destination.* alerts (NULLs never conflict).
ALTER TABLE alerts ADD COLUMN delivery_id text;
ALTER TABLE alerts ADD COLUMN delivery_attempts int;
CREATE UNIQUE INDEX alerts_delivery_death_key ON alerts (type, delivery_id, delivery_attempts);

-- delivery.dead alerts are mailed in digests, never alone: the digest (alert_digests below) that
-- listed this one, NULL while it waits for one.
ALTER TABLE alerts ADD COLUMN digest_hour timestamptz;

-- One index per queue instead of the shared one of 0002, so that deaths waiting up to an hour
-- for their digest are not walked by every look for an alert to mail alone.
DROP INDEX alerts_pending_idx;
CREATE INDEX alerts_unpublished_idx ON alerts (created_at) WHERE published_at IS NULL;
CREATE INDEX alerts_email_pending_idx ON alerts (created_at) WHERE email_state = 'pending' AND type <> 'delivery.dead';
CREATE INDEX alerts_digest_pending_idx ON alerts (destination_id, created_at) WHERE type = 'delivery.dead' AND email_state = 'pending';
-- Retention: finished alerts are pruned with the deliveries they are about.
CREATE INDEX alerts_created_idx ON alerts (created_at);

-- The digest e-mails of delivery.dead alerts. The key is the claim: at most one e-mail per
-- destination per clock hour (UTC), whichever worker opens it. A worker takes a pending digest
-- with a lease (lease_token, next_attempt_at), sends it outside any transaction, then marks it;
-- a worker that dies mid-send leaves it to be taken again when the lease runs out.
CREATE TABLE alert_digests (
  destination_id  text NOT NULL,
  hour            timestamptz NOT NULL, -- date_trunc('hour', opened, 'UTC')
  tenant_id       text NOT NULL,
  state           text NOT NULL DEFAULT 'pending', -- pending | sent | skipped | failed (EMAIL_STATES)
  next_attempt_at timestamptz NOT NULL DEFAULT now(), -- due; while taken, the lease's end
  lease_token     uuid,
  attempts        int NOT NULL DEFAULT 0,
  deaths          int,                  -- how many deliveries the sent e-mail counted
  error           text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  sent_at         timestamptz,
  PRIMARY KEY (destination_id, hour)
);
-- EMAIL_STATES in src/policy/statuses.ts (test/integration/delivery-dead.test.ts compares them).
ALTER TABLE alert_digests ADD CONSTRAINT alert_digests_state_check
  CHECK (state IN ('pending', 'sent', 'skipped', 'failed'));
CREATE INDEX alert_digests_due_idx ON alert_digests (next_attempt_at) WHERE state = 'pending';
