-- A charging run's page (GET /admin/api/charging/runs/{runId}) lists the attempts the run made,
-- paged by their seq, and counts them by state: one range of this index instead of a scan of
-- every attempt ever made. Attempts outside a run (recorded payments, sandbox triggers) have no
-- run and stay out of it.
CREATE INDEX charge_attempts_by_run ON charge_attempts (run_seq, seq) WHERE run_seq IS NOT NULL;
