-- Staff search that forgives accents, case, dots and partial text: `munoz` finds Muñoz,
-- `cust-01` finds cust-010, `12.345` finds the RUT 12345678-5.
--
-- Two FTS5 trigram indexes hold, per customer and per mandate, the text staff search by. The
-- trigram tokenizer folds case and diacritics (`remove_diacritics 1`) on both sides, and a
-- phrase of trigrams matches any substring of three characters or more from the index, never
-- by reading every row. They are contentless: the text lives in `customers` and `mandates`;
-- `contentless_delete` lets the triggers below replace a row's terms by its rowid.
--
-- The triggers are the store keeping its search terms on every write, whoever writes (the
-- API, staff actions, the CLI, the sandbox reset); the INSERTs at the end fill them for the
-- rows that existed before this migration.

CREATE VIRTUAL TABLE customer_search USING fts5(
    terms,
    content = '',
    contentless_delete = 1,
    tokenize = 'trigram remove_diacritics 1'
);

CREATE VIRTUAL TABLE mandate_search USING fts5(
    terms,
    content = '',
    contentless_delete = 1,
    tokenize = 'trigram remove_diacritics 1'
);

-- A customer is found by name (any part, any order of words), userId, our id, e-mail, and
-- RUT written with the dash (12345678-5) or without anything (123456785).
CREATE TRIGGER customer_search_insert AFTER INSERT ON customers BEGIN
    INSERT INTO customer_search (rowid, terms) VALUES (
        new.seq,
        new.first_name || ' ' || new.last_name || ' ' || coalesce(new.second_last_name, '')
            || ' ' || new.user_id || ' ' || new.id || ' ' || new.rut
            || ' ' || replace(new.rut, '-', '') || ' ' || new.email
    );
END;

CREATE TRIGGER customer_search_update AFTER UPDATE OF first_name, last_name, second_last_name,
    user_id, rut, email ON customers BEGIN
    DELETE FROM customer_search WHERE rowid = old.seq;
    INSERT INTO customer_search (rowid, terms) VALUES (
        new.seq,
        new.first_name || ' ' || new.last_name || ' ' || coalesce(new.second_last_name, '')
            || ' ' || new.user_id || ' ' || new.id || ' ' || new.rut
            || ' ' || replace(new.rut, '-', '') || ' ' || new.email
    );
END;

CREATE TRIGGER customer_search_delete AFTER DELETE ON customers BEGIN
    DELETE FROM customer_search WHERE rowid = old.seq;
END;

-- A mandate is found by the merchant's id (mandateId), ours (man_...) and its name.
CREATE TRIGGER mandate_search_insert AFTER INSERT ON mandates BEGIN
    INSERT INTO mandate_search (rowid, terms)
        VALUES (new.seq, new.external_id || ' ' || new.id || ' ' || new.name);
END;

CREATE TRIGGER mandate_search_update AFTER UPDATE OF external_id, name ON mandates BEGIN
    DELETE FROM mandate_search WHERE rowid = old.seq;
    INSERT INTO mandate_search (rowid, terms)
        VALUES (new.seq, new.external_id || ' ' || new.id || ' ' || new.name);
END;

CREATE TRIGGER mandate_search_delete AFTER DELETE ON mandates BEGIN
    DELETE FROM mandate_search WHERE rowid = old.seq;
END;

INSERT INTO customer_search (rowid, terms)
    SELECT seq,
           first_name || ' ' || last_name || ' ' || coalesce(second_last_name, '')
               || ' ' || user_id || ' ' || id || ' ' || rut
               || ' ' || replace(rut, '-', '') || ' ' || email
    FROM customers;

INSERT INTO mandate_search (rowid, terms)
    SELECT seq, external_id || ' ' || id || ' ' || name FROM mandates;

-- Sorting the staff lists by a column other than the creation time: each sort reads its rows
-- in order from an index that ends with the rowid (`seq`, the keyset's tie-breaker), so a
-- page never sorts the table. Names sort case-insensitively (NOCASE, as the query orders).
CREATE INDEX customers_by_last_name ON customers(last_name COLLATE NOCASE);
-- Mandates by the merchant's id use `mandates_by_external_id` (0006).
