-- Backlog alerts (issue 14): per destination, how long a rising backlog may go on and how old
-- its oldest waiting delivery may get (null turns either alert off), and the watch the stats
-- rollup keeps once a minute (src/policy/backlog-alerts.ts): the current run and what stands.
ALTER TABLE destinations ADD COLUMN backlog_alert_minutes int DEFAULT 30 CHECK (backlog_alert_minutes BETWEEN 1 AND 1440);
ALTER TABLE destinations ADD COLUMN backlog_alert_age_minutes int DEFAULT 60 CHECK (backlog_alert_age_minutes BETWEEN 1 AND 43200);
ALTER TABLE destinations ADD COLUMN backlog_watch jsonb;

ALTER TABLE alerts DROP CONSTRAINT alerts_type_check;
ALTER TABLE alerts ADD CONSTRAINT alerts_type_check
  CHECK (type IN ('destination.degraded', 'destination.paused', 'destination.resumed',
                  'destination.backlog_growing', 'destination.backlog_stale', 'destination.backlog_recovered',
                  'delivery.dead'));
