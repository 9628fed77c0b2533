-- migrations/0023_acquirers.sql, in PostgreSQL's dialect (see 0001_schema.sql's rules).
CREATE TABLE acquirers (
    commerce_id BIGINT NOT NULL REFERENCES commerces(id),
    rail        TEXT NOT NULL CHECK (rail IN ('cards', 'bank')),
    kind        TEXT NOT NULL CHECK (kind IN ('simulated', 'transbank', 'fintoc')),
    terms       TEXT NOT NULL,
    base_url    TEXT,
    secret      TEXT,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (commerce_id, rail)
);

ALTER TABLE charge_runs ADD COLUMN acquirer_not_configured BIGINT NOT NULL DEFAULT 0;

CREATE TABLE oneclick_inscriptions (
    token_sha256 TEXT PRIMARY KEY,
    mandate_seq  BIGINT NOT NULL REFERENCES mandates(seq),
    purpose      TEXT NOT NULL CHECK (purpose IN ('ACTIVATION', 'CARD_CHANGE')),
    terms        TEXT NOT NULL,
    ip           TEXT,
    user_agent   TEXT,
    state        TEXT NOT NULL DEFAULT 'STARTED'
                 CHECK (state IN ('STARTED', 'FINISHED', 'REFUSED', 'ABANDONED')),
    created_at   TEXT NOT NULL,
    finished_at  TEXT
);
CREATE INDEX oneclick_inscriptions_mandate ON oneclick_inscriptions (mandate_seq);
