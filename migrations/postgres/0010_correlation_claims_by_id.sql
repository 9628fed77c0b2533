-- PostgreSQL only: a correlationId's claims found with one index seek.
--
-- The claims are keyed by the day first (0001_schema.sql), so the check of a new id over the
-- retention window had to seek once per day of the window: measured, that check was the most
-- costly statement of every merchant request on PostgreSQL (bench/README.md, "PostgreSQL").
-- SQLite keeps its schema: one engine holds its file and answers nearly every check from the
-- in-memory filter of the ids it claimed, so the per-day seeks run only for the rare id the
-- filter cannot rule out.
CREATE INDEX correlation_claims_by_id ON correlation_claims (commerce_id, correlation_id, seen_at);
