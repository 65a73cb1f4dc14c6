-- Backlog alerts (issue 14): per destination, how long a rising backlog may go on and how old
-- its oldest waiting delivery may get (null turns either alert off).
-- Each check is added by the name Postgres gives an inline column check: Citus refuses an
-- unnamed constraint in ADD COLUMN.
ALTER TABLE destinations ADD COLUMN backlog_alert_minutes int DEFAULT 30;
ALTER TABLE destinations ADD CONSTRAINT destinations_backlog_alert_minutes_check CHECK (backlog_alert_minutes BETWEEN 1 AND 1440);
ALTER TABLE destinations ADD COLUMN backlog_alert_age_minutes int DEFAULT 60;
ALTER TABLE destinations ADD CONSTRAINT destinations_backlog_alert_age_minutes_check CHECK (backlog_alert_age_minutes BETWEEN 1 AND 43200);

-- The watch the stats rollup keeps once a minute (src/policy/backlog-alerts.ts): the current run
-- and what stands. A table of its own, not columns of destinations: the minute's look rewrites
-- many watches at once, and destination rows are what every claim and write-back locks (written
-- there, the look stalled delivery for the length of its transaction).
CREATE TABLE backlog_watches (
  destination_id text PRIMARY KEY,
  watch          jsonb NOT NULL
);

ALTER TABLE alerts DROP CONSTRAINT alerts_type_check;
ALTER TABLE alerts ADD CONSTRAINT alerts_type_check
  CHECK (type IN ('destination.degraded', 'destination.paused', 'destination.resumed',
                  'destination.backlog_growing', 'destination.backlog_stale', 'destination.backlog_recovered',
                  'delivery.dead'));
