-- Every call to a real acquirer (CONTRACT 13): the operation, the buy order (or transaction)
-- it concerned, the HTTP status, the acquirer's response code and how long it took. Never a
-- secret, a token or a card number. Kept 180 days (pruned by the charging run).
CREATE TABLE acquirer_calls (
    seq           BIGSERIAL PRIMARY KEY,
    commerce_id   BIGINT NOT NULL REFERENCES commerces(id),
    operation     TEXT NOT NULL,
    reference     TEXT,
    http_status   INTEGER,
    response_code BIGINT,
    duration_ms   BIGINT NOT NULL,
    error         TEXT,
    created_at    TEXT NOT NULL
);
CREATE INDEX acquirer_calls_reference ON acquirer_calls (reference);
CREATE INDEX acquirer_calls_commerce ON acquirer_calls (commerce_id, seq);
CREATE INDEX acquirer_calls_created ON acquirer_calls (created_at);
