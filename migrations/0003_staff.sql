-- Staff sessions for the UI and the record of what staff did.

CREATE TABLE staff_sessions (
    token_hash      TEXT PRIMARY KEY,          -- hex SHA-256 of the cookie value
    staff_id        INTEGER NOT NULL REFERENCES staff(id),
    csrf_token      TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,             -- absolute end of the session
    last_seen_at    TEXT NOT NULL              -- idle expiry counts from here
) STRICT, WITHOUT ROWID;

CREATE TABLE staff_audit (
    seq         INTEGER PRIMARY KEY,
    at          TEXT NOT NULL,
    staff_email TEXT NOT NULL,
    action      TEXT NOT NULL,
    target      TEXT,
    detail      TEXT
) STRICT;
CREATE INDEX staff_audit_by_time ON staff_audit(at);

ALTER TABLE staff ADD COLUMN disabled_at TEXT;
