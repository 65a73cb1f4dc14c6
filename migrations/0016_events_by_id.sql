-- Retention finds old events by id instead of by created_at (issue 13): an event id begins with the
-- time it was made, in hexadecimal milliseconds (src/ids.ts: evt_ + 12 hex digits + …), so under
-- COLLATE "C" (0015) the ids older than a moment are a range of the primary key. The created_at
-- index was written on every publish and read only by retention: one index entry per event less.
DROP INDEX events_created_idx;
