INSERT INTO parent (v) SELECT 'p' || g FROM generate_series(1, 10) g;
INSERT INTO child (parent_id, v) SELECT g, 'c' || g FROM generate_series(1, 10) g;
INSERT INTO solo (v) SELECT 's' || g FROM generate_series(1, 10) g;
INSERT INTO other SELECT generate_series(1, 10);
INSERT INTO measurements SELECT '2020-06-01'::date + g, g FROM generate_series(1, 400) g;
-- Several tables in one TRUNCATE, with CASCADE and RESTART IDENTITY.
TRUNCATE parent, child, solo RESTART IDENTITY CASCADE;
INSERT INTO parent (v) VALUES ('after');
INSERT INTO child (parent_id, v) VALUES (1, 'after');
INSERT INTO solo (v) VALUES ('after');
-- TRUNCATE in a transaction with other changes, and of a partitioned table.
BEGIN;
INSERT INTO other VALUES (11);
TRUNCATE other;
INSERT INTO other VALUES (12), (13);
COMMIT;
TRUNCATE measurements;
INSERT INTO measurements VALUES ('2021-03-03', 1);
-- TRUNCATE rolled back leaves nothing.
BEGIN;
TRUNCATE solo;
ROLLBACK;
