-- Booking: performances, their seats, holds, bookings, payments and
-- idempotency keys (MySQL / MariaDB). Times are unix milliseconds (BIGINT),
-- ids are UUID text, so the same runtime-checked queries run on MySQL and SQLite.
-- Integers are BIGINT throughout: the Any driver decodes them all as i64.

CREATE TABLE booking_performances (
    pkey BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    room VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    performance VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    title VARCHAR(800) NOT NULL,
    starts_at BIGINT NOT NULL,
    hold_ms BIGINT NOT NULL,
    max_seats_per_hold BIGINT NOT NULL,
    total_seats BIGINT NOT NULL,
    -- The sections as given (JSON): the seat map's shape and display order.
    sections TEXT NOT NULL,
    UNIQUE KEY booking_performances_id (room, performance)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- Change counter and booked count, split over a few rows per performance
-- so concurrent writers rarely wait on one hot row; readers add them up.
CREATE TABLE booking_counters (
    pkey BIGINT NOT NULL,
    shard BIGINT NOT NULL,
    changes BIGINT NOT NULL DEFAULT 0,
    booked BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (pkey, shard)
) ENGINE = InnoDB;

-- One row per seat. A seat is booked when booking_id is set, held while
-- held_until > now (by hold_id), available otherwise: an ended hold frees
-- its seats by time alone. One row per seat means one holder at a time.
CREATE TABLE booking_seats (
    pkey BIGINT NOT NULL,
    seat VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    section VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    row_no BIGINT NOT NULL,
    number BIGINT NOT NULL,
    price BIGINT NOT NULL,
    hold_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL,
    held_until BIGINT NOT NULL DEFAULT 0,
    booking_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL,
    PRIMARY KEY (pkey, seat),
    KEY booking_seats_held (pkey, held_until)
) ENGINE = InnoDB;

-- What is sold: the primary key is the rule that no seat is sold twice.
CREATE TABLE booking_seat_sales (
    pkey BIGINT NOT NULL,
    seat VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    booking_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    PRIMARY KEY (pkey, seat),
    KEY booking_seat_sales_booking (booking_id)
) ENGINE = InnoDB;

-- live_visitor is the visitor while the hold is held or paying and NULL
-- once it ended: the unique key allows one live hold per visitor and
-- performance (NULLs never collide).
CREATE TABLE booking_holds (
    hold_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    pkey BIGINT NOT NULL,
    room VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    visitor VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    live_visitor VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NULL,
    seats TEXT NOT NULL,
    total BIGINT NOT NULL,
    state VARCHAR(12) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    paying_until BIGINT NOT NULL DEFAULT 0,
    ended_at BIGINT NULL,
    booking_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL,
    UNIQUE KEY booking_holds_live (pkey, live_visitor),
    KEY booking_holds_state (state, expires_at),
    KEY booking_holds_visitor (room, visitor, state)
) ENGINE = InnoDB;

-- hold_id is unique: one hold makes at most one booking.
CREATE TABLE booking_bookings (
    booking_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    pkey BIGINT NOT NULL,
    room VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    performance VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    visitor VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    hold_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    seats TEXT NOT NULL,
    total BIGINT NOT NULL,
    status VARCHAR(12) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at BIGINT NOT NULL,
    cancelled_at BIGINT NULL,
    UNIQUE KEY booking_bookings_hold (hold_id)
) ENGINE = InnoDB;

-- Every payment attempt with its result, written before the booking is, so
-- a restart knows whether a paying hold was paid.
CREATE TABLE booking_payments (
    attempt_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    hold_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    amount BIGINT NOT NULL,
    state VARCHAR(12) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    reference VARCHAR(128) NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    KEY booking_payments_hold (hold_id)
) ENGINE = InnoDB;

-- The first answer to a confirm, per visitor and key (outcome NULL while
-- the first request is still running).
CREATE TABLE booking_idempotency (
    room VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    visitor VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    idem_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    fingerprint CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    hold_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    outcome TEXT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (room, visitor, idem_key),
    KEY booking_idempotency_hold (hold_id)
) ENGINE = InnoDB;
