-- Portal payments on Transbank Webpay Plus (CONTRACT 13): one row per transaction created
-- for a due or rejected installment, kept from the hand-off to Webpay until the outcome is
-- recorded. The token identifies the transaction at Transbank (commit, status, refund need
-- it); it moves nothing without the commerce's key.
CREATE TABLE webpay_payments (
    seq                INTEGER PRIMARY KEY,
    token              TEXT NOT NULL UNIQUE,
    buy_order          TEXT NOT NULL UNIQUE,
    mandate_seq        INTEGER NOT NULL REFERENCES mandates(seq),
    commerce_id        INTEGER NOT NULL REFERENCES commerces(id),
    installment_seq    INTEGER NOT NULL REFERENCES installments(seq),
    amount             INTEGER NOT NULL CHECK (amount > 0),
    state              TEXT NOT NULL DEFAULT 'STARTED'
                       CHECK (state IN ('STARTED', 'APPROVED', 'REFUSED', 'ABANDONED', 'REFUNDED')),
    response_code      INTEGER,
    authorization_code TEXT,
    created_at         TEXT NOT NULL,
    ended_at           TEXT
);
CREATE INDEX webpay_payments_mandate ON webpay_payments (mandate_seq, created_at);
CREATE INDEX webpay_payments_installment ON webpay_payments (installment_seq);
CREATE INDEX webpay_payments_open ON webpay_payments (created_at) WHERE state = 'STARTED';
