-- One live hold per visitor and room, whatever the performance (was: per
-- performance): one admission buys once, so it holds once. Live holds the
-- new key would refuse end first, so this cannot fail on existing data: of
-- a visitor's live holds in a room, a paying one stays (its payment decides
-- it; a visitor pays for one hold at a time), else the newest (hold ids are
-- UUID v7, the greatest is the newest); the others expire and free their
-- seats, as the sweeper would, and their performances' maps change. The
-- newest is never among those ended, so the order rows are updated in does
-- not change which end.
UPDATE booking_seats SET hold_id = NULL, held_until = 0
WHERE booking_id IS NULL AND hold_id IN (
    SELECT h.hold_id FROM booking_holds h
    WHERE h.state = 'held' AND h.live_visitor IS NOT NULL AND EXISTS (
        SELECT 1 FROM booking_holds o
        WHERE o.room = h.room AND o.live_visitor = h.live_visitor AND o.hold_id <> h.hold_id
          AND (o.state = 'paying' OR o.hold_id > h.hold_id)
    )
);
UPDATE booking_counters SET changes = changes + 1
WHERE shard = 0 AND pkey IN (
    SELECT h.pkey FROM booking_holds h
    WHERE h.state = 'held' AND h.live_visitor IS NOT NULL AND EXISTS (
        SELECT 1 FROM booking_holds o
        WHERE o.room = h.room AND o.live_visitor = h.live_visitor AND o.hold_id <> h.hold_id
          AND (o.state = 'paying' OR o.hold_id > h.hold_id)
    )
);
UPDATE booking_holds
SET state = 'expired', live_visitor = NULL,
    ended_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000
WHERE state = 'held' AND live_visitor IS NOT NULL AND EXISTS (
    SELECT 1 FROM booking_holds o
    WHERE o.room = booking_holds.room AND o.live_visitor = booking_holds.live_visitor
      AND o.hold_id <> booking_holds.hold_id
      AND (o.state = 'paying' OR o.hold_id > booking_holds.hold_id)
);
-- Two paying holds of one visitor in a room (two performances confirmed at
-- once before a restart) both stay paying, for their payments to decide;
-- all but the newest give up their place in the key (the newest never
-- changes, so the order rows are updated in does not matter).
UPDATE booking_holds SET live_visitor = NULL
WHERE state = 'paying' AND live_visitor IS NOT NULL AND EXISTS (
    SELECT 1 FROM booking_holds o
    WHERE o.room = booking_holds.room AND o.live_visitor = booking_holds.live_visitor
      AND o.state = 'paying' AND o.hold_id > booking_holds.hold_id
);
DROP INDEX booking_holds_live;
CREATE UNIQUE INDEX booking_holds_live_room ON booking_holds (room, live_visitor);
