-- Sign-in throttling: one fixed window per key (a staff e-mail, a commerce, the setup code).
-- Kept in the database so that a restart does not lift a lock.

CREATE TABLE login_throttle (
    key         TEXT PRIMARY KEY,   -- 'staff:<e-mail>', 'commerce:<code>', 'setup-code'
    opened_at   TEXT NOT NULL,      -- RFC 3339 UTC, when the window opened
    failures    INTEGER NOT NULL    -- attempts counted in it
) STRICT, WITHOUT ROWID;
CREATE INDEX login_throttle_by_opening ON login_throttle(opened_at);
