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
