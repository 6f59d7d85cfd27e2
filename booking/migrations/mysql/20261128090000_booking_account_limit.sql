-- The performance setting max_seats_per_account (NULL: no limit), and the
-- account a hold or booking was made for: the keyed hash of the visitor's
-- account, 16 hex digits, NULL for a visitor without one. The indexes
-- count an account's seats in a performance without a scan.
ALTER TABLE booking_performances ADD COLUMN max_seats_per_account BIGINT NULL;
ALTER TABLE booking_holds
    ADD COLUMN account CHAR(16) CHARACTER SET ascii COLLATE ascii_bin NULL,
    ADD KEY booking_holds_account (pkey, account, state);
ALTER TABLE booking_bookings
    ADD COLUMN account CHAR(16) CHARACTER SET ascii COLLATE ascii_bin NULL,
    ADD KEY booking_bookings_account (pkey, account, status);
-- One row per performance and account that held there under a limit: a
-- hold locks its account's row (FOR UPDATE by upsert) before it counts, so
-- two sessions of one account take turns while other accounts never wait
-- on each other. SQLite needs none: its writers take turns already.
CREATE TABLE booking_account_locks (
    pkey BIGINT NOT NULL,
    account CHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    PRIMARY KEY (pkey, account)
) ENGINE = InnoDB;
