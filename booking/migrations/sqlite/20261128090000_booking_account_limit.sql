-- The performance setting max_seats_per_account (NULL: no limit), and the
-- account a hold or booking was made for: the keyed hash of the visitor's
-- account, 16 hex digits, NULL for a visitor without one. The indexes
-- count an account's seats in a performance without a scan. (MySQL also
-- has a lock row per performance and account; SQLite's writers take turns
-- already, under BEGIN IMMEDIATE.)
ALTER TABLE booking_performances ADD COLUMN max_seats_per_account BIGINT NULL;
ALTER TABLE booking_holds ADD COLUMN account CHAR(16) NULL;
CREATE INDEX booking_holds_account ON booking_holds (pkey, account, state);
ALTER TABLE booking_bookings ADD COLUMN account CHAR(16) NULL;
CREATE INDEX booking_bookings_account ON booking_bookings (pkey, account, status);
