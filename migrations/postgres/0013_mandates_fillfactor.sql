-- Room on each page of mandates for the rewrites that change no indexed column: the event
-- sequence every payment event takes (twice per charged installment) and a mandate's terms.
-- With it such an update writes the new row version on the same page (a HOT update) and
-- touches none of the table's ten indexes; on a full page it writes an entry into every one.
-- Pages written from now on keep a fifth free; existing pages get it when the table is
-- rewritten (VACUUM FULL, or a dump and restore).
ALTER TABLE mandates SET (fillfactor = 80);
