-- 1 MB values, incompressible enough to be stored out of line.
INSERT INTO docs SELECT g, 'title ' || g,
    (SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 32768) i),
    (SELECT decode(string_agg(md5(i::text || g::text), ''), 'hex') FROM generate_series(1, 65536) i),
    jsonb_build_object('big', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 4000) i))
FROM generate_series(1, 3) g;
UPDATE docs SET title = 'changed ' || id;
UPDATE docs SET title = 'again', meta = '{"small": true}' WHERE id = 2;
UPDATE docs SET body = body || 'tail' WHERE id = 3;
UPDATE docs SET id = id + 10 WHERE id = 1;
DELETE FROM docs WHERE id = 2;

INSERT INTO docs_full SELECT g, 'title', (SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 32768) i)
FROM generate_series(1, 2) g;
INSERT INTO docs_full SELECT * FROM docs_full;
UPDATE docs_full SET title = 'one' WHERE ctid = (SELECT ctid FROM docs_full WHERE id = 1 LIMIT 1);
DELETE FROM docs_full WHERE ctid = (SELECT ctid FROM docs_full WHERE id = 2 LIMIT 1);
