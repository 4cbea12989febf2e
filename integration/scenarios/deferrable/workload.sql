INSERT INTO dk SELECT g, 'v' || g FROM generate_series(1, 10) g;
INSERT INTO du SELECT g, g, 'v' || g FROM generate_series(1, 10) g;
-- One statement swaps two keys (checked at its end).
UPDATE dk SET id = 3 - id WHERE id IN (1, 2);
-- A transaction rotates three keys, one statement at a time.
BEGIN;
SET CONSTRAINTS ALL DEFERRED;
UPDATE dk SET id = 4 WHERE v = 'v5';
UPDATE dk SET id = 5 WHERE v = 'v6';
UPDATE dk SET id = 6 WHERE v = 'v4';
UPDATE dk SET v = v || '!' WHERE id IN (4, 5, 6);
COMMIT;
-- A deferred unique column: swapped, then one of the rows deleted while
-- its code is still shared.
BEGIN;
UPDATE du SET code = 2 WHERE id = 1;
UPDATE du SET v = 'changed' WHERE id = 2;
DELETE FROM du WHERE id = 2;
UPDATE du SET code = 1 WHERE id = 3;
UPDATE du SET code = 3 WHERE id = 1;
UPDATE du SET code = 2 WHERE id = 3;
COMMIT;
UPDATE du SET code = 20 - code;
DELETE FROM dk WHERE id = 1;
