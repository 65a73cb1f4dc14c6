-- Schema safety (issue 6): the database holds status-like columns to the values Sluice knows.
-- The lists are those of src/policy/statuses.ts (test/unit/statuses.test.ts compares them), so
-- a misspelt status in a query fails at once instead of stranding a row no query looks for.

ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
  CHECK (status IN ('queued', 'retry_scheduled', 'delivering', 'delivered', 'dead', 'discarded'));

ALTER TABLE attempts ADD CONSTRAINT attempts_outcome_check
  CHECK (outcome IN ('success', 'failure', 'throttled'));

ALTER TABLE destinations ADD CONSTRAINT destinations_health_status_check
  CHECK (health_status IN ('healthy', 'degraded', 'critical', 'unhealthy'));

ALTER TABLE destinations ADD CONSTRAINT destinations_pause_cause_check
  CHECK (pause_cause IN ('manual', 'transient', 'permanent'));

ALTER TABLE alerts ADD CONSTRAINT alerts_type_check
  CHECK (type IN ('destination.degraded', 'destination.paused', 'destination.resumed'));

ALTER TABLE alerts ADD CONSTRAINT alerts_email_state_check
  CHECK (email_state IN ('pending', 'sent', 'skipped', 'failed'));
