-- Electronic signature processes (CONTRACT 8): the process, its signatories and documents,
-- where each signatory signs each document, and the hash-chained audit trail of every act.

CREATE TABLE signature_processes (
    seq                 INTEGER PRIMARY KEY,
    id                  TEXT NOT NULL UNIQUE,          -- sig_...
    commerce_id         INTEGER NOT NULL REFERENCES commerces(id),
    process_name        TEXT NOT NULL,
    external_process_id TEXT,
    request_user        TEXT,
    state               INTEGER NOT NULL,              -- 1 PENDING .. 6 EXPIRED
    url_callback        TEXT NOT NULL,
    url_webhook         TEXT NOT NULL,
    expires_at          TEXT NOT NULL,                 -- business time (the sandbox clock moves it)
    rejection_reason    TEXT,
    event_sequence      INTEGER NOT NULL DEFAULT 0,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    finished_at         TEXT                           -- completed, cancelled, rejected or expired
) STRICT;
CREATE INDEX signature_processes_by_commerce ON signature_processes(commerce_id, seq);
-- The expiry sweep reads open processes by their expiry.
CREATE INDEX signature_processes_open ON signature_processes(expires_at) WHERE state IN (1, 2);

CREATE TABLE signature_signatories (
    seq                 INTEGER PRIMARY KEY,
    id                  TEXT NOT NULL UNIQUE,          -- sgn_...
    process_seq         INTEGER NOT NULL REFERENCES signature_processes(seq),
    position            INTEGER NOT NULL,              -- index in the request's signatories
    customer_seq        INTEGER NOT NULL REFERENCES customers(seq),
    sign_order          INTEGER NOT NULL,
    type                TEXT NOT NULL CHECK (type IN ('FES', 'FEA', 'FAO')),
    state               INTEGER NOT NULL,              -- 1 PENDING, 2 SIGNED, 3 REJECTED
    token               TEXT NOT NULL UNIQUE,          -- the signing link's only credential
    -- Name and RUT as they were when the process was created: what the stamps print.
    full_name           TEXT NOT NULL,
    rut                 TEXT NOT NULL,
    email               TEXT NOT NULL,
    viewed_at           TEXT,
    code_hash           TEXT,                          -- hex SHA-256 of the current one-time code
    code_plain          TEXT,                          -- sandbox only: shown to staff, never in a page
    code_expires_at     TEXT,
    code_attempts       INTEGER NOT NULL DEFAULT 0,    -- wrong entries of the current code
    codes_sent          INTEGER NOT NULL DEFAULT 0,
    code_verified_at    TEXT,
    identity_confirmed_at TEXT,                        -- FES: the code; FEA/FAO: the extra step
    failures            INTEGER NOT NULL DEFAULT 0,    -- wrong RUT, codes, identity answers
    signed_at           TEXT,
    rejected_at         TEXT,
    rejection_reason    TEXT,
    UNIQUE (process_seq, position)
) STRICT;
CREATE INDEX signature_signatories_by_process ON signature_signatories(process_seq, position);

CREATE TABLE signature_documents (
    seq                 INTEGER PRIMARY KEY,
    id                  TEXT NOT NULL UNIQUE,          -- doc_...
    process_seq         INTEGER NOT NULL REFERENCES signature_processes(seq),
    position            INTEGER NOT NULL,
    name                TEXT NOT NULL,
    page_count          INTEGER NOT NULL,
    original            BLOB NOT NULL,                 -- the bytes uploaded, kept for good
    sha256              TEXT NOT NULL,
    size_bytes          INTEGER NOT NULL,
    sealed              BLOB,                          -- stamped, with the certificate appended
    sealed_sha256       TEXT,
    UNIQUE (process_seq, position)
) STRICT;

-- Where a signatory signs a document: MANUAL boxes (PDF points, origin top-left of the page as
-- displayed) or LAST_PAGE (the signature page appended when sealing).
CREATE TABLE signature_placements (
    seq                 INTEGER PRIMARY KEY,
    document_seq        INTEGER NOT NULL REFERENCES signature_documents(seq),
    signatory_seq       INTEGER NOT NULL REFERENCES signature_signatories(seq),
    mode                TEXT NOT NULL CHECK (mode IN ('MANUAL', 'LAST_PAGE')),
    page                INTEGER,
    x                   REAL,
    y                   REAL,
    width               REAL,
    height              REAL
) STRICT;
CREATE INDEX signature_placements_by_document ON signature_placements(document_seq);

-- Every act of a process, each record hashing the one before it: a changed, removed or
-- reordered record breaks the chain.
CREATE TABLE signature_audit (
    seq                 INTEGER PRIMARY KEY,
    process_seq         INTEGER NOT NULL REFERENCES signature_processes(seq),
    position            INTEGER NOT NULL,              -- 1, 2, 3 ... within the process
    at                  TEXT NOT NULL,
    action              TEXT NOT NULL,
    signatory_id        TEXT,
    ip                  TEXT,
    user_agent          TEXT,
    documents           TEXT NOT NULL,                 -- JSON [{"documentName", "sha256"}]
    detail              TEXT NOT NULL,                 -- JSON object
    prev_hash           TEXT NOT NULL,
    hash                TEXT NOT NULL,
    UNIQUE (process_seq, position)
) STRICT;

-- Signature process events share the outbox; their sequence counts per process.
ALTER TABLE events ADD COLUMN signature_process_seq INTEGER REFERENCES signature_processes(seq);
CREATE INDEX events_by_signature_process ON events(signature_process_seq, sequence)
    WHERE signature_process_seq IS NOT NULL;
