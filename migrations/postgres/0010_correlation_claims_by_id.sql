-- PostgreSQL only: a correlationId's claim in one round trip and one index seek.
--
-- The claims are keyed by the day first (0001_schema.sql), so the check of a new id over the
-- retention window had to seek once per day of the window: measured, that check was the most
-- costly statement of every merchant request on PostgreSQL (bench/README.md, "PostgreSQL").
-- SQLite keeps its schema: one engine holds its file and answers nearly every check from the
-- in-memory filter of the ids it claimed, so the per-day seeks run only for the rare id the
-- filter cannot rule out.
CREATE INDEX correlation_claims_by_id ON correlation_claims (commerce_id, correlation_id, seen_at);

-- A merchant request's claim of its correlationId, in one statement the engine sends with
-- the transaction's BEGIN: an advisory lock on the id (so that concurrent claims of one id, on
-- any engine, take turns), then, in a statement that starts after the lock and so sees every
-- claim committed before it, the check over the window and the claim. False when the commerce
-- used the id at `p_cutoff` or later.
CREATE FUNCTION mandato_claim_correlation(
    p_commerce_id BIGINT, p_correlation_id TEXT, p_cutoff TEXT, p_seen_at TEXT)
RETURNS BOOLEAN LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_correlation_id, p_commerce_id));
    IF EXISTS (SELECT 1 FROM correlation_claims c
               WHERE c.commerce_id = p_commerce_id AND c.correlation_id = p_correlation_id
                 AND c.seen_at >= p_cutoff) THEN
        RETURN FALSE;
    END IF;
    INSERT INTO correlation_claims (day, commerce_id, correlation_id, seen_at)
        VALUES (substr(p_seen_at, 1, 10), p_commerce_id, p_correlation_id, p_seen_at)
        ON CONFLICT DO NOTHING;
    RETURN TRUE;
END
$$;
