-- One live hold per visitor and room, whatever the performance (was: per
-- performance): one admission buys once, so it holds once. Live holds the
-- new key would refuse end first, so this cannot fail on existing data: of
-- a visitor's live holds in a room, a paying one stays (its payment decides
-- it; a visitor pays for one hold at a time), else the newest (hold ids are
-- UUID v7, the greatest is the newest); the others expire and free their
-- seats, as the sweeper would, and their performances' maps change.
CREATE TEMPORARY TABLE booking_holds_surplus (
    hold_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    pkey BIGINT NOT NULL
);
INSERT INTO booking_holds_surplus (hold_id, pkey)
SELECT h.hold_id, h.pkey FROM booking_holds h
WHERE h.state = 'held' AND h.live_visitor IS NOT NULL AND EXISTS (
    SELECT 1 FROM booking_holds o
    WHERE o.room = h.room AND o.live_visitor = h.live_visitor AND o.hold_id <> h.hold_id
      AND (o.state = 'paying' OR o.hold_id > h.hold_id)
);
UPDATE booking_seats s JOIN booking_holds_surplus x ON s.hold_id = x.hold_id
SET s.hold_id = NULL, s.held_until = 0
WHERE s.booking_id IS NULL;
UPDATE booking_counters c JOIN (SELECT DISTINCT pkey FROM booking_holds_surplus) p
    ON c.pkey = p.pkey
SET c.changes = c.changes + 1
WHERE c.shard = 0;
UPDATE booking_holds h JOIN booking_holds_surplus x ON h.hold_id = x.hold_id
SET h.state = 'expired', h.live_visitor = NULL,
    h.ended_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED);
DROP TEMPORARY TABLE booking_holds_surplus;
-- Two paying holds of one visitor in a room (two performances confirmed at
-- once before a restart) both stay paying, for their payments to decide;
-- all but the newest give up their place in the key.
CREATE TEMPORARY TABLE booking_holds_paying_surplus (
    hold_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY
);
INSERT INTO booking_holds_paying_surplus (hold_id)
SELECT h.hold_id FROM booking_holds h
WHERE h.state = 'paying' AND h.live_visitor IS NOT NULL AND EXISTS (
    SELECT 1 FROM booking_holds o
    WHERE o.room = h.room AND o.live_visitor = h.live_visitor
      AND o.state = 'paying' AND o.hold_id > h.hold_id
);
UPDATE booking_holds h JOIN booking_holds_paying_surplus x ON h.hold_id = x.hold_id
SET h.live_visitor = NULL;
DROP TEMPORARY TABLE booking_holds_paying_surplus;
ALTER TABLE booking_holds
    DROP INDEX booking_holds_live,
    ADD UNIQUE KEY booking_holds_live_room (room, live_visitor);
