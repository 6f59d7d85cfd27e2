-- The queue session a hold was made in (the ticket's sequence number), so
-- a purchase finished by recovery can end that session as a confirm would.
-- NULL for holds made outside a session (older rows, direct store use).
ALTER TABLE booking_holds ADD COLUMN session_seq BIGINT NULL;
