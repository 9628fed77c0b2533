-- Each commerce's fee rule per payment method (CONTRACT 13): what its acquirer charges for an
-- approved charge, which the ledger records since neither Transbank nor Fintoc reports fees at
-- charge time. A method without a row uses the simulated acquirer's rates.
CREATE TABLE fee_rules (
    commerce_id        INTEGER NOT NULL REFERENCES commerces(id),
    method_id          INTEGER NOT NULL CHECK (method_id IN (3, 4, 5, 6, 11, 14)),
    commission_percent TEXT NOT NULL,
    fixed_amount       TEXT NOT NULL,
    iva                INTEGER NOT NULL CHECK (iva IN (0, 1)),
    updated_at         TEXT NOT NULL,
    PRIMARY KEY (commerce_id, method_id)
);
