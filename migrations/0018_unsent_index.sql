-- The tenant's dead and discarded deliveries, newest first (GET /v1/deliveries?status=dead, the
-- dashboard's dead letters). Without it a status filter across a tenant walked every delivery the
-- tenant has until it filled a page, and a store holds few dead letters among many delivered:
-- 38 ms at 300,000 deliveries on a server, growing with the store. Partial, so a delivery adds an
-- entry only when it dies or is discarded; the hot path (publish, delivered) never writes to it.
-- Waiting and in-flight filters use the waiting indexes of 0001 (src/db/queries/deliveries.ts).
CREATE INDEX deliveries_unsent_idx ON deliveries (tenant_id, id) WHERE status IN ('dead', 'discarded');
