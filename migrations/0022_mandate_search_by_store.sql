-- A new mandate's search terms are now written by the store (`store::mandates::insert`), in
-- a statement of their own, instead of by an AFTER INSERT trigger.
--
-- A trigger makes its INSERT a multi-row write that may abort, so SQLite opens a statement
-- journal for it, and every statement journal asks each FTS5 index written in the transaction
-- for a savepoint, which makes FTS5 write its pending terms to disk as a new segment. With the
-- trigger (and RETURNING, which SQLite runs as a trigger too), a group commit of N creations
-- wrote N segments that later had to be merged; without them it writes one at its commit.
-- The update and delete triggers stay: those writes are rare.
DROP TRIGGER mandate_search_insert;
