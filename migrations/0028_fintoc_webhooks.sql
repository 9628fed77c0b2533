-- Fintoc's webhooks (CONTRACT 13). The secret of the endpoint registered at Fintoc signs each
-- event (`Fintoc-Signature`); it is stored as the API secret is.
ALTER TABLE acquirers ADD COLUMN webhook_secret TEXT;

-- Each verified event, once per signature: a second delivery of the same signed request is a
-- replay and is refused; Fintoc's own resend of an event (the same id, signed anew) is taken
-- and answered without acting twice. `handled_at` is set once the engine has asked Fintoc
-- about the event's object; rows are kept seven days.
CREATE TABLE fintoc_events (
    event_id    TEXT NOT NULL,
    signed_at   INTEGER NOT NULL,
    commerce_id INTEGER NOT NULL REFERENCES commerces(id),
    type        TEXT NOT NULL,
    object_id   TEXT NOT NULL,
    received_at TEXT NOT NULL,
    handled_at  TEXT,
    PRIMARY KEY (event_id, signed_at)
);
CREATE INDEX fintoc_events_open ON fintoc_events (received_at) WHERE handled_at IS NULL;
