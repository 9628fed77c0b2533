-- The reconciliation ledger: one row per money movement of a commerce, written in the same
-- transaction as the state change that causes it, and never changed afterwards.

CREATE TABLE ledger_entries (
    seq                     INTEGER PRIMARY KEY,       -- append order: the ledger's keyset
    id                      TEXT NOT NULL UNIQUE,      -- led_...
    commerce_id             INTEGER NOT NULL REFERENCES commerces(id),
    kind                    TEXT NOT NULL
        CHECK (kind IN ('CHARGE', 'REVERSAL', 'MANUAL_PAYMENT', 'ANNULMENT')),
    amount                  TEXT NOT NULL,             -- exact decimal; negative for reversals
    currency                TEXT NOT NULL,
    fee                     TEXT,                      -- the processor's fee, when it reports one
    net                     TEXT,                      -- amount - fee, when there is a fee
    -- The same amounts in ten-thousandths of the unit, so SQL sums them exactly; a missing fee
    -- is 0 and a missing net is the amount.
    amount_e4               INTEGER NOT NULL,
    fee_e4                  INTEGER NOT NULL,
    net_e4                  INTEGER NOT NULL,
    payment_method          TEXT,                      -- CREDIT_CARD ... DIRECT_EPAC, MANUAL; NULL for annulments
    mandate_id              TEXT NOT NULL,
    mandate_external_id     TEXT NOT NULL,
    installment_id          TEXT NOT NULL,
    installment_external_id TEXT NOT NULL,
    acquirer_reference      TEXT,                      -- authorization code (charges, reversals)
    business_date           TEXT NOT NULL,             -- YYYY-MM-DD, America/Santiago
    created_at              TEXT NOT NULL
) STRICT;
-- The listing's keyset (append order), alone and filtered by kind; settlements and payout
-- reports by business date; reconciliation by reference.
CREATE INDEX ledger_entries_by_commerce ON ledger_entries(commerce_id, seq);
CREATE INDEX ledger_entries_by_kind ON ledger_entries(commerce_id, kind, seq);
CREATE INDEX ledger_entries_by_date ON ledger_entries(commerce_id, business_date, seq);
CREATE INDEX ledger_entries_by_reference ON ledger_entries(commerce_id, acquirer_reference);

-- The sandbox reset of a commerce is the only removal: it writes a permit here, removes the
-- commerce's entries and the permit, all in its one transaction.
CREATE TABLE ledger_erasure_permits (
    commerce_id INTEGER PRIMARY KEY
) STRICT;

CREATE TRIGGER ledger_entries_refuse_update BEFORE UPDATE ON ledger_entries
BEGIN
    SELECT RAISE(ABORT, 'ledger entries are append-only');
END;

CREATE TRIGGER ledger_entries_refuse_delete BEFORE DELETE ON ledger_entries
WHEN NOT EXISTS (SELECT 1 FROM ledger_erasure_permits WHERE commerce_id = OLD.commerce_id)
BEGIN
    SELECT RAISE(ABORT, 'ledger entries are append-only');
END;

-- Payout reports imported for reconciliation, with their result (JSON as answered).
CREATE TABLE reconciliations (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,                 -- rec_...
    commerce_id  INTEGER NOT NULL REFERENCES commerces(id),
    lines        INTEGER NOT NULL,
    matched      INTEGER NOT NULL,
    unpaid       INTEGER NOT NULL,                     -- entries without a payout line
    unknown      INTEGER NOT NULL,                     -- payout lines without an entry
    result       TEXT NOT NULL,
    created_by   TEXT NOT NULL,                        -- API, CLI, or the staff member's e-mail
    created_at   TEXT NOT NULL
) STRICT;
CREATE INDEX reconciliations_by_commerce ON reconciliations(commerce_id, seq);

-- The simulated acquirer's fee on each approved charge (NULL before fees were reported).
ALTER TABLE sim_charges ADD COLUMN fee TEXT;
