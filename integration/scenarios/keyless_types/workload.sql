-- Single-row transactions (INSERT path).
INSERT INTO kl VALUES (
    1, -32768, -2147483648, -9223372036854775808, 'NaN', 12345678.1234, '-0', '-0', '-92233720368547758.08', true,
    'ab', '', '', 'nm', 'x', '\x00ff00'::bytea, '4713-01-01 BC', '00:00:00', '23:59:59.999999+14:59',
    '-infinity', '-infinity', '-178000000 years', '00000000-0000-0000-0000-000000000000',
    '{"a": [1, 2.50, "x"], "a": null}', '{"b": 1, "a": [true, null]}', '<a x="1">t &amp; u</a>',
    '::1', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05', B'1010', B'1',
    '(1.5,-2)', '{1,-1,0}', '[(0,0),(1,1)]', '((0,0),(1,1))', '[(0,0),(1,1),(2,0)]', '((0,0),(1,1),(2,0))', '<(0,0),1.5>',
    'a fat cat:2 sat', 'fat & (rat | cat)', '{1,NULL,3}', '{"a","NULL",NULL,"","with,comma","quote\"d"}',
    '{{1,2},{3,4}}', 'ünïcödé 😀', '{sad,happy}', 7, '(1,"x y")', '[1,5)', '(,2.5]', '[2020-01-01 00:00:00+00,infinity)',
    'empty', '{[1,3),[5,9)}', 4294967295, 'FFFFFFFF/FFFFFFFF');
INSERT INTO kl VALUES (
    2, 32767, 2147483647, 9223372036854775807, 'Infinity', -0.0001, 'NaN', 'Infinity', 92233720368547758.07, false,
    'abcde', 'tab	and
newline', E'back\\slash \t tab \n nl \r cr', 'long name', ' ', ''::bytea, 'infinity', '24:00:00', '00:00:00-15:59',
    'infinity', 'infinity', '1 year 2 mons 3 days 04:05:06.789', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    '[]', '[]', '', '192.168.1.1/24', '::/0', 'ff:ff:ff:ff:ff:ff', 'ff:ff:ff:ff:ff:ff:ff:ff', B'0000', B'',
    '(0,0)', '{0,1,0}', '[(1e300,-1e300),(0,0)]', '((-1,-1),(1,1))', '((0,0),(1,1))', '((0,0))', '<(0,0),0>',
    '', '!a', '{}', '{}', '{{NULL,NULL}}', 'sad', '{}', 1, '(,)', 'empty', 'empty', '(,)', '[2000-01-01,2000-01-02)',
    '{}', 0, '0/0');
INSERT INTO kl VALUES (
    3, 0, 0, 0, '-Infinity', 0, 'Infinity', '-Infinity', 0, NULL,
    NULL, NULL, 'Ünïcödé ✓ 😀 𝄞 日本語 العربية', NULL, NULL, '\x5c00'::bytea, '2000-02-29', '12:34:56.789', NULL,
    '1999-12-31 23:59:59.999999', '2024-02-29 12:00:00.000001+05:30', '-1 days +02:00', NULL,
    'null', '"str"', NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, '{NULL}', '{NULL}', NULL, NULL, '{NULL}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO kl (id) VALUES (4);
INSERT INTO kl (id, c_numeric, c_double, c_real, c_text) VALUES
    (5, '0.000000000000000000000000000001', 1.7976931348623157e308, 1.4e-45, repeat('x', 10000)),
    (6, '123456789012345678901234567890.123456789012345678901234567890', 5e-324, 3.4028235e38, '\N');

-- Identical duplicates of every row.
INSERT INTO kl SELECT * FROM kl;

-- Every row found by its whole old image, every column compared.
UPDATE kl SET c_varchar = coalesce(c_varchar, '') || '+';
-- One of two identical rows, then the other.
UPDATE kl SET c_text = 'first' WHERE ctid = (SELECT ctid FROM kl WHERE id = 1 LIMIT 1);
UPDATE kl SET c_bool = NOT c_bool, c_char = 'zz', c_inet = '10.1.2.3', c_cidr = '10.1.0.0/16' WHERE id = 2;
DELETE FROM kl WHERE ctid = (SELECT ctid FROM kl WHERE id = 2 LIMIT 1);
DELETE FROM kl WHERE id = 3;
UPDATE kl SET c_point = '(9,9)', c_json = '{"changed": true}', c_xml = '<b/>' WHERE id = 4;
DELETE FROM kl WHERE id IN (5, 6) AND ctid IN (SELECT ctid FROM kl WHERE id IN (5, 6) LIMIT 3);

INSERT INTO near VALUES ('n', 1.0, 0, '1 day', '{}', '{}'), ('n', 1.00, 0, '1 day', '{}', '{}'),
    ('f', 0, 0, '1 day', '{}', '{}'), ('f', 0, '-0', '1 day', '{}', '{}'),
    ('i', 0, 0, '1 day', '{}', '{}'), ('i', 0, 0, '24 hours', '{}', '{}'),
    ('j', 0, 0, '1 day', '{"a": 1.0}', '{}'), ('j', 0, 0, '1 day', '{"a": 1.00}', '{}'),
    ('a', 0, 0, '1 day', '{}', '{1.0}'), ('a', 0, 0, '1 day', '{}', '{1.00}');
-- Each changes the second row of its pair, not the first one that is
-- equal to it.
UPDATE near SET tag = 'n2' WHERE tag = 'n' AND n::text = '1.00';
UPDATE near SET tag = 'f2' WHERE tag = 'f' AND f::text = '-0';
UPDATE near SET tag = 'i2' WHERE tag = 'i' AND i::text = '24:00:00';
UPDATE near SET tag = 'j2' WHERE tag = 'j' AND j::text = '{"a": 1.00}';
UPDATE near SET tag = 'a2' WHERE tag = 'a' AND a::text = '{1.00}';
DELETE FROM near WHERE tag = 'n2';
