-- Deferrable keys cannot be a replica identity, so these tables are
-- REPLICA IDENTITY FULL, and a statement or transaction may swap two keys:
-- in the middle of the swap two rows have the same key on the target too,
-- so the key alone cannot find a row.
CREATE TABLE dk (id integer PRIMARY KEY DEFERRABLE INITIALLY IMMEDIATE, v text);
ALTER TABLE dk REPLICA IDENTITY FULL;
CREATE TABLE du (id integer NOT NULL, code integer UNIQUE DEFERRABLE INITIALLY DEFERRED, v text);
ALTER TABLE du REPLICA IDENTITY FULL;
