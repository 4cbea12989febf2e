-- A table without a key: rows are found by their whole old image, and
-- identical duplicates must be changed one at a time.
CREATE TABLE dup (a integer, b text, j json, p point);
ALTER TABLE dup REPLICA IDENTITY FULL;
-- REPLICA IDENTITY FULL on a keyed table: the target's primary key is used.
CREATE TABLE fullkey (id integer PRIMARY KEY, v text);
ALTER TABLE fullkey REPLICA IDENTITY FULL;
-- REPLICA IDENTITY USING INDEX: a unique index instead of the primary key.
CREATE TABLE byindex (id serial PRIMARY KEY, code text NOT NULL, v integer);
CREATE UNIQUE INDEX byindex_code ON byindex (code);
ALTER TABLE byindex REPLICA IDENTITY USING INDEX byindex_code;
