-- SQLite's 0032_charge_attempts_by_run.sql: a charging run's attempts by one index range.
CREATE INDEX charge_attempts_by_run ON charge_attempts (run_seq, seq) WHERE run_seq IS NOT NULL;
