-- The sweeper deletes rows past their time (booking/retention.rs):
-- idempotency keys by their age, declined payment attempts by theirs.
-- These indexes find them without a scan; ended holds have theirs already.
CREATE INDEX booking_idempotency_created ON booking_idempotency (created_at);
CREATE INDEX booking_payments_state ON booking_payments (state, updated_at);
