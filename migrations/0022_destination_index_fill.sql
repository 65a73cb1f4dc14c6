-- The indexes led by destination_id take their inserts at one place per destination, not at the
-- right-hand end, so each page split leaves two halves that nothing fills again; with the entries of
-- superseded row versions (no update of a delivery is HOT) their leaves settle at 25-45 % full
-- under the soak's mix (docs/benchmarks.md, bench:soak). Packed at the default 90 % by a rebuild,
-- they regrow to twice that within a retention period, which read as bloat and had them rebuilt
-- every period for nothing, each rebuild a table scan and a wave of page splits after it. Built at
-- 40 %, a rebuild leaves them near the fill they settle at, and the janitor's factor reads real
-- bloat only (src/policy/index-rebuild.ts). Applies from each index's next build.
ALTER INDEX deliveries_pkey SET (fillfactor = 40);
ALTER INDEX deliveries_waiting_idx SET (fillfactor = 40);
ALTER INDEX deliveries_next_idx SET (fillfactor = 40);
ALTER INDEX deliveries_finished_order_idx SET (fillfactor = 40);
ALTER INDEX attempts_pkey SET (fillfactor = 40);
ALTER INDEX attempts_destination_time_idx SET (fillfactor = 40);
