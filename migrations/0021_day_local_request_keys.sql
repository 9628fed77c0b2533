-- Every merchant request writes a correlationId claim and an audit row whose correlationId is a
-- client's random UUID. Keyed by that UUID alone, each insert lands on a random page of a
-- B-tree spanning the whole retention window: once the window outgrows the page cache, every
-- insert reads a page from disk and writes a whole page to the WAL. Keyed by the day first,
-- a day's inserts stay inside that day's part of the tree, which is small and in cache; a
-- lookup by correlationId seeks once per day of the window (a few days, or the audit log's
-- days for a staff search), which is cheap.

CREATE TABLE correlation_claims (
    day             TEXT NOT NULL,                 -- substr(seen_at, 1, 10), UTC
    commerce_id     INTEGER NOT NULL,
    correlation_id  TEXT NOT NULL,
    seen_at         TEXT NOT NULL,
    PRIMARY KEY (day, commerce_id, correlation_id)
) STRICT, WITHOUT ROWID;

INSERT INTO correlation_claims (day, commerce_id, correlation_id, seen_at)
    SELECT substr(seen_at, 1, 10), commerce_id, correlation_id, seen_at FROM correlation_ids;
DROP TABLE correlation_ids;

DROP INDEX audit_log_by_correlation;
CREATE INDEX audit_log_by_day_correlation ON audit_log(substr(at, 1, 10), correlation_id);
