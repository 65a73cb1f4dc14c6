-- Adaptive pace (issue 14): opt-in per destination. `adaptive` is its config (null = off);
-- `pace_state` the controller's memory (src/policy/adaptive-pace.ts), written by the write-back
-- under the destination's row lock and read by the claim: effective rate and concurrency.
ALTER TABLE destinations ADD COLUMN adaptive jsonb;
ALTER TABLE destinations ADD COLUMN pace_state jsonb;
