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
