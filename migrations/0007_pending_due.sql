-- The delivery worker asks when the earliest pending event falls due each time it runs out of
-- work. With many events waiting for a retry (a receiver down for hours) that was a scan of
-- every pending event; this index answers it from its first entry.
CREATE INDEX events_pending_due ON events(next_attempt_at) WHERE delivery_state = 'PENDING';
