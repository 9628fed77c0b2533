-- The first schema of mandato. Released migrations are never edited; add a new file instead.
-- Amounts are TEXT holding exact decimals; timestamps are RFC 3339 UTC with milliseconds;
-- business dates are YYYY-MM-DD in the environment's time zone.

-- Environment-wide settings and generated key material (one row per name).
CREATE TABLE settings (
    name        TEXT PRIMARY KEY,
    value       TEXT NOT NULL
) STRICT;

CREATE TABLE commerces (
    id                      INTEGER PRIMARY KEY,
    code                    TEXT NOT NULL UNIQUE,
    name                    TEXT NOT NULL,
    password_hash           TEXT NOT NULL,
    channels                TEXT,              -- JSON array of allowed channels, NULL = any
    payment_methods         TEXT NOT NULL,     -- JSON array of enabled method ids
    webhook_secret          TEXT NOT NULL,
    authorization_required  INTEGER NOT NULL DEFAULT 0,
    created_at              TEXT NOT NULL
) STRICT;

CREATE TABLE api_keys (
    id          INTEGER PRIMARY KEY,
    prefix      TEXT NOT NULL,
    key_hash    TEXT NOT NULL UNIQUE,          -- hex SHA-256 of the full key
    all_commerces INTEGER NOT NULL,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
) STRICT;

CREATE TABLE api_key_commerces (
    api_key_id  INTEGER NOT NULL REFERENCES api_keys(id),
    commerce_id INTEGER NOT NULL REFERENCES commerces(id),
    PRIMARY KEY (api_key_id, commerce_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE staff (
    id              INTEGER PRIMARY KEY,
    email           TEXT NOT NULL UNIQUE COLLATE NOCASE,
    password_hash   TEXT NOT NULL,
    role            TEXT NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
    created_at      TEXT NOT NULL
) STRICT;

CREATE TABLE customers (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,      -- usr_...
    commerce_id     INTEGER NOT NULL REFERENCES commerces(id),
    user_id         TEXT NOT NULL,
    rut             TEXT NOT NULL,
    first_name      TEXT NOT NULL,
    last_name       TEXT NOT NULL,
    second_last_name TEXT,
    address         TEXT,                      -- JSON object or NULL
    email           TEXT NOT NULL,
    phone           TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (commerce_id, user_id),
    UNIQUE (commerce_id, rut)
) STRICT;

CREATE TABLE mandates (
    seq                     INTEGER PRIMARY KEY,
    id                      TEXT NOT NULL UNIQUE,  -- man_...
    commerce_id             INTEGER NOT NULL REFERENCES commerces(id),
    customer_seq            INTEGER NOT NULL REFERENCES customers(seq),
    external_id             TEXT NOT NULL,
    type                    INTEGER NOT NULL,
    state                   INTEGER NOT NULL,
    name                    TEXT NOT NULL,
    detail                  TEXT,
    terminate_when_charged  INTEGER NOT NULL,
    charges                 TEXT NOT NULL,         -- JSON: the accepted charges object
    payment_methods         TEXT NOT NULL,         -- JSON array of allowed method ids
    metadata                TEXT,                  -- JSON, merchant-owned
    url_callback            TEXT,
    url_activation_webhook  TEXT,
    url_payment_webhook     TEXT,
    magic_link_token        TEXT NOT NULL UNIQUE,
    magic_link_expires_at   TEXT NOT NULL,
    enrolled_method         TEXT,                  -- JSON: {id, name, instrument} once active
    cancel_description      TEXT,
    event_sequence          INTEGER NOT NULL DEFAULT 0,
    created_at              TEXT NOT NULL,
    updated_at              TEXT NOT NULL,
    UNIQUE (commerce_id, external_id)
) STRICT;
CREATE INDEX mandates_by_customer ON mandates(customer_seq);
CREATE INDEX mandates_by_commerce_state ON mandates(commerce_id, state);

CREATE TABLE installments (
    seq                 INTEGER PRIMARY KEY,       -- creation order: the receivables cursor
    id                  TEXT NOT NULL UNIQUE,      -- ins_...
    mandate_seq         INTEGER NOT NULL REFERENCES mandates(seq),
    commerce_id         INTEGER NOT NULL REFERENCES commerces(id),
    external_id         TEXT NOT NULL,
    amount              TEXT NOT NULL,
    currency            TEXT NOT NULL,
    due_date            TEXT NOT NULL,
    state               INTEGER NOT NULL,
    state_at            TEXT NOT NULL,             -- the wire `dateTime`
    attempts            INTEGER NOT NULL DEFAULT 0,
    payment_method_id   INTEGER,
    authorization_code  TEXT,
    rejection_code      TEXT,
    rejection_message   TEXT,
    payment             TEXT,                      -- JSON: manual payment evidence
    created_at          TEXT NOT NULL,
    UNIQUE (mandate_seq, external_id)
) STRICT;
CREATE INDEX installments_by_mandate_due ON installments(mandate_seq, due_date);
CREATE INDEX installments_by_commerce ON installments(commerce_id, seq);
CREATE INDEX installments_due ON installments(state, due_date);

-- The outbox: every event is written in the transaction of the change that causes it and
-- delivered later. `body` is the exact JSON sent, signature included, so retries resend it.
CREATE TABLE events (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,          -- evt_...
    commerce_id     INTEGER NOT NULL REFERENCES commerces(id),
    mandate_seq     INTEGER REFERENCES mandates(seq),
    installment_seq INTEGER REFERENCES installments(seq),
    kind            TEXT NOT NULL,                 -- activation | payment | signature
    sequence        INTEGER NOT NULL,
    url             TEXT,                          -- NULL: the merchant gave no webhook
    body            TEXT NOT NULL,
    delivery_state  TEXT NOT NULL DEFAULT 'PENDING',
    next_attempt_at TEXT,
    created_at      TEXT NOT NULL
) STRICT;
CREATE INDEX events_by_mandate ON events(mandate_seq, sequence);
CREATE INDEX events_pending ON events(delivery_state, next_attempt_at);

-- correlationId replay protection: seen ids per commerce, kept 7 days.
CREATE TABLE correlation_ids (
    commerce_id     INTEGER NOT NULL,
    correlation_id  TEXT NOT NULL,
    seen_at         TEXT NOT NULL,
    PRIMARY KEY (commerce_id, correlation_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX correlation_ids_by_age ON correlation_ids(seen_at);

-- Every API request: headers without secrets, method, path, status, duration.
CREATE TABLE audit_log (
    seq             INTEGER PRIMARY KEY,
    at              TEXT NOT NULL,
    method          TEXT NOT NULL,
    path            TEXT NOT NULL,
    status          INTEGER NOT NULL,
    duration_ms     REAL NOT NULL,
    commerce        TEXT,
    correlation_id  TEXT,
    api_key_prefix  TEXT,
    headers         TEXT NOT NULL,                 -- JSON of the common headers, secrets removed
    peer            TEXT
) STRICT;
CREATE INDEX audit_log_by_time ON audit_log(at);
