-- The file staff attach to a payment they record by hand (a transfer's voucher, a deposit
-- slip): PDF, PNG or JPEG, kept in the database with the payment, like the signature
-- documents, so a backup holds it and one transaction writes it with the installments it
-- pays. One payment may pay several installments with one file, so the bytes are kept once
-- and each paid installment points at them.
CREATE TABLE payment_evidence_files (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,                 -- pef_...
    commerce_id     INTEGER NOT NULL REFERENCES commerces(id),
    mandate_seq     INTEGER NOT NULL REFERENCES mandates(seq) ON DELETE CASCADE,
    name            TEXT NOT NULL,                        -- as uploaded, for the download
    content_type    TEXT NOT NULL,                        -- from the bytes, not the name
    size_bytes      INTEGER NOT NULL,
    sha256          TEXT NOT NULL,
    bytes           BLOB NOT NULL,
    uploaded_by     TEXT NOT NULL,                        -- the staff member's e-mail
    created_at      TEXT NOT NULL
) STRICT;
CREATE INDEX payment_evidence_files_by_mandate ON payment_evidence_files(mandate_seq);

CREATE TABLE installment_evidence_files (
    installment_seq INTEGER NOT NULL REFERENCES installments(seq) ON DELETE CASCADE,
    file_seq        INTEGER NOT NULL REFERENCES payment_evidence_files(seq) ON DELETE CASCADE,
    PRIMARY KEY (installment_seq, file_seq)
) STRICT, WITHOUT ROWID;
CREATE INDEX installment_evidence_files_by_file ON installment_evidence_files(file_seq);

-- The staff's global search finds an installment by the merchant's id in any mandate.
CREATE INDEX installments_by_external_id ON installments(external_id);
