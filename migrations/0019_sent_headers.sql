-- The Standard Webhooks headers each attempt sent, so staff see exactly what a receiver got and
-- can check its signatures later. `webhook-id` is the event's id and is not repeated here. Both
-- stay NULL for attempts refused before any request was made (and for attempts made before this
-- migration).
ALTER TABLE delivery_attempts ADD COLUMN webhook_timestamp INTEGER;
ALTER TABLE delivery_attempts ADD COLUMN webhook_signature TEXT;
