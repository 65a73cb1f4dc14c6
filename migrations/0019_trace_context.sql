-- Tracing (docs/tracing.md). An event keeps the W3C trace context it was published in, so every
-- attempt, however much later, joins that trace and forwards it to the receiver. Nullable and
-- without a default: adding them rewrites no row, and a publish without a traceparent stores
-- nothing more than before.
ALTER TABLE events
  ADD COLUMN traceparent text COLLATE "C",
  ADD COLUMN tracestate text COLLATE "C";

-- The last pause a destination came out of, so an attempt's trace can say its delivery waited for
-- it. Written by the resume statements only; paused_at itself is cleared on resume.
ALTER TABLE destinations
  ADD COLUMN last_paused_at timestamptz,
  ADD COLUMN last_resumed_at timestamptz;
