-- The merchant Events API and `mandato listen`.

-- Attempts gain the kind LISTEN (a copy sent to a developer's listener). SQLite cannot change a
-- CHECK constraint in place, so the table is rebuilt with its rows and index.
CREATE TABLE delivery_attempts_0011 (
    seq             INTEGER PRIMARY KEY,
    event_seq       INTEGER NOT NULL REFERENCES events(seq),
    kind            TEXT NOT NULL CHECK (kind IN ('FIRST', 'RETRY', 'MANUAL', 'INJECTED', 'LISTEN')),
    started_at      TEXT NOT NULL,
    duration_ms     INTEGER NOT NULL,
    status_code     INTEGER,              -- NULL when no HTTP answer came
    response_excerpt TEXT,                -- at most 2 KiB of the answer
    error           TEXT,                 -- connect/timeout/TLS failure, or refusal reason
    outcome         TEXT NOT NULL CHECK (outcome IN ('DELIVERED', 'RETRY', 'FAILED'))
) STRICT;
INSERT INTO delivery_attempts_0011
    SELECT seq, event_seq, kind, started_at, duration_ms, status_code, response_excerpt, error, outcome
    FROM delivery_attempts;
DROP TABLE delivery_attempts;
ALTER TABLE delivery_attempts_0011 RENAME TO delivery_attempts;
CREATE INDEX delivery_attempts_by_event ON delivery_attempts(event_seq, seq);

-- A commerce's events newest first (the Events API's keyset).
CREATE INDEX events_by_commerce ON events(commerce_id, seq);

-- Running `mandato listen` receivers: each gets a copy of every event of its commerce created
-- while its lease is live. The listener renews `expires_at`; one killed stops being used then.
CREATE TABLE listen_leases (
    id          TEXT PRIMARY KEY,             -- lis_...
    commerce_id INTEGER NOT NULL REFERENCES commerces(id),
    url         TEXT NOT NULL,                -- https://127.0.0.1:PORT/
    event_types TEXT,                         -- comma-separated kinds; NULL: every kind
    expires_at  TEXT NOT NULL,
    created_at  TEXT NOT NULL
) STRICT;
CREATE INDEX listen_leases_by_commerce ON listen_leases(commerce_id, expires_at);

-- Copies still to send, written with their event (same transaction) for each live lease.
CREATE TABLE listen_deliveries (
    seq         INTEGER PRIMARY KEY,
    event_seq   INTEGER NOT NULL REFERENCES events(seq) ON DELETE CASCADE,
    lease_id    TEXT NOT NULL REFERENCES listen_leases(id) ON DELETE CASCADE
) STRICT;
CREATE INDEX listen_deliveries_by_lease ON listen_deliveries(lease_id);
CREATE INDEX listen_deliveries_by_event ON listen_deliveries(event_seq);
