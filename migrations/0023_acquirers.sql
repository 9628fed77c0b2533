-- Which acquirer moves each commerce's money, per rail (CONTRACT 13): `cards` (Transbank or,
-- in a sandbox, the simulation) and `bank` (Fintoc or the simulation). `terms` holds the
-- kind's public settings as JSON (Transbank's commerce codes, Fintoc's public key); `secret`
-- the API secret, never shown again once set.
CREATE TABLE acquirers (
    commerce_id INTEGER NOT NULL REFERENCES commerces(id),
    rail        TEXT NOT NULL CHECK (rail IN ('cards', 'bank')),
    kind        TEXT NOT NULL CHECK (kind IN ('simulated', 'transbank', 'fintoc')),
    terms       TEXT NOT NULL,
    base_url    TEXT,
    secret      TEXT,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (commerce_id, rail)
);

-- Due installments a run left alone because their commerce has no acquirer for the rail
-- (a production installation never falls back to the simulation).
ALTER TABLE charge_runs ADD COLUMN acquirer_not_configured INTEGER NOT NULL DEFAULT 0;

-- Oneclick inscriptions started from a Magic Link, until Transbank brings the customer back
-- to `/link/{token}/oneclick/return`. Transbank's token is a bearer credential for the
-- inscription: only its SHA-256 is kept. `purpose` says what a finished inscription does:
-- activate the mandate or replace its card.
CREATE TABLE oneclick_inscriptions (
    token_sha256 TEXT PRIMARY KEY,
    mandate_seq  INTEGER NOT NULL REFERENCES mandates(seq),
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
