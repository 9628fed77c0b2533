-- Idempotent creation by the merchant's own ids (CONTRACT 14): what POST /user, /mandate,
-- /installments and /signature answered, per commerce, kind of creation and merchant id, so
-- that an equal request repeated (a retry after a lost answer) gets that answer again.
-- `merchant_key` is the `userId`, the `mandate.id` or the `externalProcessId`; for
-- installments, the mandate as the request names it and the SHA-256 of the request's sorted
-- installment ids. `request_sha256` is the SHA-256 of the request body's canonical JSON
-- (RFC 8785); `response` the body answered, byte for byte. Written in the creation's own
-- transaction; a customer's row follows its latest write (POST /user also updates).
CREATE TABLE creation_replays (
    commerce_id    INTEGER NOT NULL REFERENCES commerces(id),
    kind           TEXT NOT NULL,
    merchant_key   TEXT NOT NULL,
    request_sha256 TEXT NOT NULL,
    status         INTEGER NOT NULL,
    response       TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    PRIMARY KEY (commerce_id, kind, merchant_key)
);

-- POST /signature refuses an `externalProcessId` the commerce already used.
CREATE INDEX signature_processes_external_id
    ON signature_processes (commerce_id, external_process_id)
    WHERE external_process_id IS NOT NULL;
