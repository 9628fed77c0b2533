-- API keys get a name people recognise and the time of their last use (written by the audit
-- writer at most once a minute per key, never on the request path).
ALTER TABLE api_keys ADD COLUMN name TEXT;
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;

-- A password an admin reset is temporary: its holder must choose a new one at the next sign-in.
ALTER TABLE staff ADD COLUMN password_change_required INTEGER NOT NULL DEFAULT 0
    CHECK (password_change_required IN (0, 1));
