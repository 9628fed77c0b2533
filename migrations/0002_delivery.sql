-- Webhook delivery: attempts, trusted roots, secret rotation, sandbox fault injection.

-- How many automatic attempts an event has had, and whether the next one was asked for by hand.
ALTER TABLE events ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN manual_pending INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN delivered_at TEXT;
-- The worker reads pending events in creation order.
DROP INDEX events_pending;
CREATE INDEX events_pending_in_order ON events(seq) WHERE delivery_state = 'PENDING';

-- Every delivery attempt, kept for the log.
CREATE TABLE delivery_attempts (
    seq             INTEGER PRIMARY KEY,
    event_seq       INTEGER NOT NULL REFERENCES events(seq),
    kind            TEXT NOT NULL CHECK (kind IN ('FIRST', 'RETRY', 'MANUAL', 'INJECTED')),
    started_at      TEXT NOT NULL,
    duration_ms     INTEGER NOT NULL,
    status_code     INTEGER,              -- NULL when no HTTP answer came
    response_excerpt TEXT,                -- at most 512 characters of the answer
    error           TEXT,                 -- connect/timeout/TLS failure, or refusal reason
    outcome         TEXT NOT NULL CHECK (outcome IN ('DELIVERED', 'RETRY', 'FAILED'))
) STRICT;
CREATE INDEX delivery_attempts_by_event ON delivery_attempts(event_seq, seq);

-- Extra root certificates the delivery worker trusts (beside the system's and its own CA).
CREATE TABLE trusted_roots (
    seq         INTEGER PRIMARY KEY,
    pem         TEXT NOT NULL,
    fingerprint TEXT NOT NULL UNIQUE,     -- hex SHA-256 of the DER
    subject     TEXT NOT NULL,
    added_at    TEXT NOT NULL
) STRICT;

-- Secret rotation: the previous secret stays valid (headers carry both signatures) until then.
ALTER TABLE commerces ADD COLUMN previous_webhook_secret TEXT;
ALTER TABLE commerces ADD COLUMN previous_secret_expires_at TEXT;

-- Sandbox fault injection per commerce: JSON {"duplicateEvery", "reorder", "delaySeconds"}.
ALTER TABLE commerces ADD COLUMN delivery_faults TEXT;
