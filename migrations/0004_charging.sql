-- Activation, the charging engine, the simulated acquirer, UF values.

-- The customer's payment instrument for a mandate: only what is safe to keep (a processor
-- token, the brand and last four digits, or the bank, account type and masked number).
CREATE TABLE instruments (
    seq             INTEGER PRIMARY KEY,
    mandate_seq     INTEGER NOT NULL UNIQUE REFERENCES mandates(seq),
    method_id       INTEGER NOT NULL,
    processor_token TEXT NOT NULL,
    brand           TEXT,
    last4           TEXT NOT NULL,
    bank_code       TEXT,
    account_type    TEXT,
    holder_rut      TEXT,
    created_at      TEXT NOT NULL
) STRICT;

-- What the customer accepted, and where from.
CREATE TABLE acceptances (
    seq             INTEGER PRIMARY KEY,
    mandate_seq     INTEGER NOT NULL REFERENCES mandates(seq),
    accepted_at     TEXT NOT NULL,
    ip              TEXT,
    user_agent      TEXT,
    terms           TEXT NOT NULL,
    terms_sha256    TEXT NOT NULL,
    document_sha256 TEXT                  -- the EPAC mandate PDF, when one was made
) STRICT;

ALTER TABLE mandates ADD COLUMN activated_at TEXT;

-- Charging state per installment.
ALTER TABLE installments ADD COLUMN last_attempt_date TEXT;   -- business date of the latest attempt
ALTER TABLE installments ADD COLUMN next_retry_date TEXT;     -- REJECTED (soft): when to retry
ALTER TABLE installments ADD COLUMN retry_scheduled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE installments ADD COLUMN first_rejected_date TEXT; -- start of the current retry series
ALTER TABLE installments ADD COLUMN forced_outcome TEXT;      -- sandbox: JSON {"result", "code"}
ALTER TABLE installments ADD COLUMN charged_clp TEXT;         -- CLF installments: the CLP charged
CREATE INDEX installments_retry ON installments(next_retry_date) WHERE state = -99;

-- Every charge attempt, written IN_PROCESS with its idempotency key before the processor is
-- called, so that a crash can be reconciled instead of charging twice.
CREATE TABLE charge_attempts (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,          -- pay_...
    installment_seq INTEGER NOT NULL REFERENCES installments(seq),
    run_seq         INTEGER,
    attempt_no      INTEGER NOT NULL,
    business_date   TEXT NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    amount          TEXT NOT NULL,
    currency        TEXT NOT NULL,
    state           TEXT NOT NULL,                 -- IN_PROCESS, IN_VALIDATION, PAID, REJECTED
    authorization_code TEXT,
    rejection_code  TEXT,
    created_at      TEXT NOT NULL,
    finished_at     TEXT,
    UNIQUE (installment_seq, business_date)
) STRICT;
CREATE INDEX charge_attempts_open ON charge_attempts(state) WHERE state IN ('IN_PROCESS', 'IN_VALIDATION');

CREATE TABLE charge_runs (
    seq             INTEGER PRIMARY KEY,
    business_date   TEXT NOT NULL,
    trigger         TEXT NOT NULL,                 -- SCHEDULE, CATCH_UP, MANUAL, SANDBOX
    state           TEXT NOT NULL,                 -- RUNNING, FINISHED, INTERRUPTED
    started_at      TEXT NOT NULL,
    finished_at     TEXT,
    total           INTEGER NOT NULL DEFAULT 0,
    done            INTEGER NOT NULL DEFAULT 0,
    attempted       INTEGER NOT NULL DEFAULT 0,
    paid            INTEGER NOT NULL DEFAULT 0,
    rejected        INTEGER NOT NULL DEFAULT 0,
    in_validation   INTEGER NOT NULL DEFAULT 0,
    in_process      INTEGER NOT NULL DEFAULT 0,
    settled         INTEGER NOT NULL DEFAULT 0,
    waiting_uf      INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX charge_runs_by_date ON charge_runs(business_date);

-- The simulated acquirer's own ledger: what it charged, by idempotency key. A real acquirer
-- keeps this on its side; the simulation keeps it here so it survives restarts like one.
CREATE TABLE sim_charges (
    idempotency_key TEXT PRIMARY KEY,
    token           TEXT NOT NULL,
    amount          TEXT NOT NULL,
    currency        TEXT NOT NULL,
    result          TEXT NOT NULL,                 -- APPROVED, REJECTED, PENDING
    code            TEXT,                          -- authorization or rejection code
    settles_as      TEXT,                          -- PENDING charges: APPROVED or REJECTED
    created_at      TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE sim_instruments (
    token           TEXT PRIMARY KEY,
    kind            TEXT NOT NULL,                 -- CARD or BANK
    last4           TEXT NOT NULL,
    created_at      TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- UF (Unidad de Fomento) values in CLP per date.
CREATE TABLE uf_values (
    date            TEXT PRIMARY KEY,
    value           TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- Retry policy per commerce: JSON {"afterDays": [1, 3, 7]}; NULL = the default.
ALTER TABLE commerces ADD COLUMN retry_policy TEXT;
