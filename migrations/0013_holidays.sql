-- The business-day calendar: one-off holidays staff add (the national ones are computed), and
-- where each commerce's charges go when their due date is not a business day.
CREATE TABLE holidays (
    date        TEXT PRIMARY KEY,              -- YYYY-MM-DD
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
) STRICT, WITHOUT ROWID;

ALTER TABLE commerces ADD COLUMN charging_rule TEXT NOT NULL DEFAULT 'NEXT'
    CHECK (charging_rule IN ('NEXT', 'PREVIOUS'));
