-- Mandates activated by an electronic signature: the commerce's default mode, the mode each
-- mandate was created with, and the signature processes its Magic Link started.
ALTER TABLE commerces ADD COLUMN activation_mode TEXT NOT NULL DEFAULT 'DIRECT'
    CHECK (activation_mode IN ('DIRECT', 'SIGNATURE'));
ALTER TABLE mandates ADD COLUMN activation_mode TEXT NOT NULL DEFAULT 'DIRECT'
    CHECK (activation_mode IN ('DIRECT', 'SIGNATURE'));

-- One row per signature process a mandate's enrolment started (a new one after a rejected,
-- expired or cancelled process). The mandate becomes ACTIVE with `enrolled_method` in the
-- transaction that stores its process COMPLETED.
CREATE TABLE mandate_signatures (
    seq             INTEGER PRIMARY KEY,
    mandate_seq     INTEGER NOT NULL REFERENCES mandates(seq),
    process_seq     INTEGER NOT NULL UNIQUE REFERENCES signature_processes(seq),
    enrolled_method TEXT NOT NULL,                 -- JSON {id, name, instrument (masked)}
    created_at      TEXT NOT NULL,
    failure_reason  TEXT CHECK (failure_reason IN
                        ('SIGNATURE_REJECTED', 'SIGNATURE_EXPIRED', 'SIGNATURE_CANCELLED')),
    failed_at       TEXT
) STRICT;
CREATE INDEX mandate_signatures_by_mandate ON mandate_signatures(mandate_seq, seq);
