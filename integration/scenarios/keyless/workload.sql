INSERT INTO dup VALUES (1, 'x', '{"k": 1}', '(1,1)'), (1, 'x', '{"k": 1}', '(1,1)'), (1, 'x', '{"k": 1}', '(1,1)');
INSERT INTO dup VALUES (NULL, NULL, NULL, NULL), (NULL, NULL, NULL, NULL);
INSERT INTO dup VALUES (2, '', '[]', '(0,0)'), (2, NULL, '[]', '(0,0)');
-- Change exactly one of three identical rows, then delete one of the rest.
UPDATE dup SET b = 'y' WHERE ctid = (SELECT ctid FROM dup WHERE a = 1 LIMIT 1);
DELETE FROM dup WHERE ctid = (SELECT ctid FROM dup WHERE a = 1 AND b = 'x' LIMIT 1);
-- All-NULL duplicates: NULL-safe matching.
UPDATE dup SET a = 9 WHERE ctid = (SELECT ctid FROM dup WHERE a IS NULL LIMIT 1);
DELETE FROM dup WHERE ctid = (SELECT ctid FROM dup WHERE a IS NULL LIMIT 1);
-- Empty string and NULL are different rows.
DELETE FROM dup WHERE a = 2 AND b = '';
-- A statement touching several identical rows at once.
INSERT INTO dup SELECT 5, 'many', NULL, NULL FROM generate_series(1, 20);
UPDATE dup SET b = 'many2' WHERE a = 5 AND ctid IN (SELECT ctid FROM dup WHERE a = 5 LIMIT 7);
DELETE FROM dup WHERE a = 5 AND b = 'many' AND ctid IN (SELECT ctid FROM dup WHERE a = 5 AND b = 'many' LIMIT 4);

INSERT INTO fullkey SELECT g, 'v' || g FROM generate_series(1, 50) g;
UPDATE fullkey SET v = NULL WHERE id % 3 = 0;
UPDATE fullkey SET id = id + 100 WHERE id % 7 = 0;
DELETE FROM fullkey WHERE id % 5 = 0;

INSERT INTO byindex (code, v) SELECT 'c' || g, g FROM generate_series(1, 30) g;
UPDATE byindex SET v = v * 10 WHERE v % 2 = 0;
UPDATE byindex SET code = code || 'x' WHERE v % 3 = 0;
DELETE FROM byindex WHERE v % 4 = 0;
