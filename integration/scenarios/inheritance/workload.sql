INSERT INTO city SELECT g, 'city ' || g FROM generate_series(1, 20) g;
INSERT INTO capital SELECT g, 'city ' || g, 'state ' || g FROM generate_series(1, 20) g;
INSERT INTO place SELECT 'p' || (g % 5), g % 3 FROM generate_series(1, 20) g;
INSERT INTO town SELECT 'p' || (g % 5), g % 3, 'm' FROM generate_series(1, 20) g;
-- Parents' own rows; the children hold rows with the same keys and values.
UPDATE ONLY city SET name = name || ' upd' WHERE id % 2 = 0;
UPDATE ONLY city SET id = id + 100 WHERE id % 5 = 0;
DELETE FROM ONLY city WHERE id % 3 = 0;
UPDATE ONLY place SET pop = pop + 10 WHERE name = 'p1';
DELETE FROM ONLY place WHERE name = 'p2';
-- And the children's rows, through the children.
UPDATE capital SET name = 'cap ' || id WHERE id % 4 = 0;
DELETE FROM capital WHERE id % 7 = 0;
UPDATE town SET pop = -1 WHERE name = 'p3';
DELETE FROM town WHERE name = 'p4';
-- Through the parent, reaching both.
UPDATE city SET name = name || '!' WHERE id = 1;
DELETE FROM place WHERE name = 'p0';
