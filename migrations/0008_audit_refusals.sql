-- Requests refused before their API key was accepted (missing or malformed headers, an unknown
-- key, a foreign Host) are counted per minute and reason instead of each writing an audit_log
-- row: a flood of them adds at most one row per reason and minute.
CREATE TABLE audit_refusals (
    minute  TEXT NOT NULL,      -- RFC 3339 UTC, the minute's first millisecond
    reason  TEXT NOT NULL,      -- INVALID_HEADERS, INVALID_API_KEY, HOST_NOT_ALLOWED
    count   INTEGER NOT NULL,
    PRIMARY KEY (minute, reason)
) STRICT, WITHOUT ROWID;
