-- The staff UI's lists and dashboard: every list is read newest first by a keyset over
-- (created_at, seq), so each filter has an index that yields its rows already in that order
-- (an index ends with the rowid, which is `seq`), and a page never sorts the whole table.

CREATE INDEX mandates_by_created ON mandates(created_at);
CREATE INDEX mandates_by_state_created ON mandates(state, created_at);
CREATE INDEX mandates_by_type_created ON mandates(type, created_at);
CREATE INDEX mandates_by_commerce_created ON mandates(commerce_id, created_at);
CREATE INDEX mandates_by_external_id ON mandates(external_id);

CREATE INDEX customers_by_created ON customers(created_at);
CREATE INDEX customers_by_rut ON customers(rut);
CREATE INDEX customers_by_user_id ON customers(user_id);

-- Amounts collected per day (PAID by the time of that state) and next charges.
CREATE INDEX installments_by_state_time ON installments(state, state_at);
-- Amounts rejected per day.
CREATE INDEX charge_attempts_rejected_by_date ON charge_attempts(business_date) WHERE state = 'REJECTED';
-- Failing webhooks on the dashboard.
CREATE INDEX events_failed ON events(seq) WHERE delivery_state = 'FAILED';
-- The audit screen's search by correlationId.
CREATE INDEX audit_log_by_correlation ON audit_log(correlation_id);
