-- `mandato trigger`'s throwaway records (CONTRACT 14): its customer, mandate and signature
-- process are marked when created, so that settlements, payout reports and staff totals leave
-- them (and everything hanging off them: installments, attempts, ledger entries) out, and
-- `mandato sandbox reset --triggers-only` removes just them. 1 marks a trigger's record.
ALTER TABLE customers ADD COLUMN sandbox_trigger INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mandates ADD COLUMN sandbox_trigger INTEGER NOT NULL DEFAULT 0;
ALTER TABLE signature_processes ADD COLUMN sandbox_trigger INTEGER NOT NULL DEFAULT 0;

-- Totals exclude the few marked mandates with `NOT IN (SELECT seq FROM mandates WHERE
-- sandbox_trigger = 1)`: these partial indexes keep that subquery as small as the marks.
CREATE INDEX mandates_sandbox_trigger ON mandates (commerce_id, seq) WHERE sandbox_trigger = 1;
CREATE INDEX customers_sandbox_trigger ON customers (commerce_id, seq) WHERE sandbox_trigger = 1;
CREATE INDEX signature_processes_sandbox_trigger
    ON signature_processes (commerce_id, seq) WHERE sandbox_trigger = 1;
