-- (0021 and 0022 were tried and reverted: their numbers stay unused, so that a store one of them
-- migrated is refused as newer rather than taken for up to date.)
--
-- deliveries_event_idx becomes a hash index. Every use of it is an equality on event_id: retention
-- asking whether an event still has a delivery, the listing's event filter, the events listing's
-- destination filter. As a B-tree it was one of the indexes that retention cannot shrink: event
-- ids begin with their creation time, so new keys only ever go to the right-hand end, and the
-- deliveries held past retention (a paused or failing destination's) are spread over the whole
-- range, each leaf page keeping a few of them — a page is reused only once empty. It grew by about
-- its packed size every retention period until the janitor rebuilt it (policy/index-rebuild.ts).
-- A hash index files a key by its hash, not its order: the space VACUUM frees in a bucket takes
-- the next keys that hash there, so it levels off at the rows it holds and is never rebuilt (the
-- rebuilds are for B-trees). Its entries keep the 4-byte hash, not the 27-character id.
--
-- On a large existing store this migration rebuilds the index while it holds deliveries' lock.
DROP INDEX deliveries_event_idx;
CREATE INDEX deliveries_event_idx ON deliveries USING hash (event_id);
