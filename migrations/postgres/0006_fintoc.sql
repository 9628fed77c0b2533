-- Fintoc Direct Debit (CONTRACT 13). A charge's id is Fintoc's: each attempt's charge is
-- recorded under the attempt's idempotency key once Fintoc answers, so its outcome can be
-- asked for later. (A crash before the record is safe: the same key sent again within 24 h
-- answers the same charge, Fintoc's idempotency.)
CREATE TABLE fintoc_charges (
    idempotency_key TEXT PRIMARY KEY,
    charge_id       TEXT NOT NULL UNIQUE,
    created_at      TEXT NOT NULL
);

-- A Magic Link's subscription intent, from the widget until the bank validates it: what the
-- customer accepted, and the subscription Fintoc made.
CREATE TABLE fintoc_enrolments (
    intent_id       TEXT PRIMARY KEY,
    mandate_seq     BIGINT NOT NULL REFERENCES mandates(seq),
    method_id       BIGINT NOT NULL CHECK (method_id IN (5, 6, 14)),
    terms           TEXT NOT NULL,
    ip              TEXT,
    user_agent      TEXT,
    -- STARTED: the widget is open; VALIDATING: the bank is validating the subscription;
    -- ACTIVATED, FAILED, ABANDONED: ended.
    state           TEXT NOT NULL DEFAULT 'STARTED'
                    CHECK (state IN ('STARTED', 'VALIDATING', 'ACTIVATED', 'FAILED', 'ABANDONED')),
    subscription_id TEXT,
    failure         TEXT,
    created_at      TEXT NOT NULL,
    ended_at        TEXT
);
CREATE INDEX fintoc_enrolments_mandate ON fintoc_enrolments (mandate_seq, created_at);
CREATE INDEX fintoc_enrolments_open ON fintoc_enrolments (state) WHERE state IN ('STARTED', 'VALIDATING');
