-- The staff audit as a hash chain (`chain.rs`, `store/staff_audit.rs`): each record keeps the
-- hash of the record before it and its own hash over all of its fields and that previous hash.
-- Records written before this migration are chained right after it, in the same transaction.

ALTER TABLE staff_audit ADD COLUMN prev_hash TEXT;
ALTER TABLE staff_audit ADD COLUMN hash TEXT;

-- No two records can follow the same record: the chain can never fork.
CREATE UNIQUE INDEX staff_audit_chain_link ON staff_audit(prev_hash);

-- The chain's last record, moved on by every append: records removed from the end of the
-- chain, or added to it without being chained, no longer match it.
CREATE TABLE staff_audit_head (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    seq     INTEGER NOT NULL,
    hash    TEXT NOT NULL
) STRICT;
