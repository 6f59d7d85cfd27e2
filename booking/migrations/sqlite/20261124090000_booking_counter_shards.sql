-- The change counter is split over 128 rows per performance (was 32): add
-- shards 32 to 127 to the performances made before, so their writers
-- spread out too. Plain SQL, the same on MySQL and SQLite.
INSERT INTO booking_counters (pkey, shard, changes, booked)
SELECT c.pkey, c.shard + 32, 0, 0 FROM booking_counters c
WHERE c.shard < 32 AND NOT EXISTS (
    SELECT 1 FROM booking_counters d WHERE d.pkey = c.pkey AND d.shard = c.shard + 32
);
INSERT INTO booking_counters (pkey, shard, changes, booked)
SELECT c.pkey, c.shard + 64, 0, 0 FROM booking_counters c
WHERE c.shard < 64 AND NOT EXISTS (
    SELECT 1 FROM booking_counters d WHERE d.pkey = c.pkey AND d.shard = c.shard + 64
);
