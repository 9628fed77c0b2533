-- Payment attempts made through a Magic Link's portal that reached the processor (CONTRACT 12:
-- at most 5 declines per link per hour). A row is written before the processor is called and
-- removed when the attempt did not end in a decline, so concurrent submissions cannot all slip
-- under the limit, and the count survives a restart. `at` is wall-clock RFC 3339 UTC with
-- milliseconds, which orders as text.
CREATE TABLE portal_attempts (
    seq          INTEGER PRIMARY KEY,
    mandate_seq  INTEGER NOT NULL REFERENCES mandates(seq) ON DELETE CASCADE,
    at           TEXT NOT NULL
);
CREATE INDEX portal_attempts_by_link ON portal_attempts(mandate_seq, at);
