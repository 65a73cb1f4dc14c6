-- An index's figure is taken again one retention period after its rebuild, once retention has
-- replaced every entry the rebuild packed (src/policy/index-rebuild.ts): its bloat is read
-- against that settled figure. Rows measured before this column came are read as just rebuilt.
ALTER TABLE index_rebuilds ADD COLUMN settled boolean NOT NULL DEFAULT false;
