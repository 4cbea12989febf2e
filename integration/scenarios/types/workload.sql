-- Single-row transactions (INSERT path).
INSERT INTO alltypes VALUES (
    1, -32768, -2147483648, -9223372036854775808, 'NaN', 12345678.1234, '-0', '-0', '-92233720368547758.08', true,
    'ab', '', '', 'nm', 'x', '\x00ff00'::bytea, '4713-01-01 BC', '00:00:00', '23:59:59.999999+14:59',
    '-infinity', '-infinity', '-178000000 years', '00000000-0000-0000-0000-000000000000',
    '{"a": [1, 2.50, "x"], "a": null}', '{"b": 1, "a": [true, null]}', '<a x="1">t &amp; u</a>',
    '::1', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05', B'1010', B'1',
    '(1.5,-2)', '{1,-1,0}', '[(0,0),(1,1)]', '((0,0),(1,1))', '[(0,0),(1,1),(2,0)]', '((0,0),(1,1),(2,0))', '<(0,0),1.5>',
    'a fat cat:2 sat', 'fat & (rat | cat)', '{1,NULL,3}', '{"a","NULL",NULL,"","with,comma","quote\"d"}',
    '{{1,2},{3,4}}', 'ünïcödé 😀', '{sad,happy}', 7, '(1,"x y")', '[1,5)', '(,2.5]', '[2020-01-01 00:00:00+00,infinity)',
    'empty', '{[1,3),[5,9)}', 4294967295, 'FFFFFFFF/FFFFFFFF');
INSERT INTO alltypes VALUES (
    2, 32767, 2147483647, 9223372036854775807, 'Infinity', -0.0001, 'NaN', 'Infinity', 92233720368547758.07, false,
    'abcde', 'tab	and
newline', E'back\\slash \t tab \n nl \r cr', 'long name', ' ', ''::bytea, 'infinity', '24:00:00', '00:00:00-15:59',
    'infinity', 'infinity', '1 year 2 mons 3 days 04:05:06.789', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    '[]', '[]', '', '192.168.1.1/24', '::/0', 'ff:ff:ff:ff:ff:ff', 'ff:ff:ff:ff:ff:ff:ff:ff', B'0000', B'',
    '(0,0)', '{0,1,0}', '[(1e300,-1e300),(0,0)]', '((-1,-1),(1,1))', '((0,0),(1,1))', '((0,0))', '<(0,0),0>',
    '', '!a', '{}', '{}', '{{NULL,NULL}}', 'sad', '{}', 1, '(,)', 'empty', 'empty', '(,)', '[2000-01-01,2000-01-02)',
    '{}', 0, '0/0');
INSERT INTO alltypes VALUES (
    3, 0, 0, 0, '-Infinity', 0, 'Infinity', '-Infinity', 0, NULL,
    NULL, NULL, 'Ünïcödé ✓ 😀 𝄞 日本語 العربية', NULL, NULL, '\x5c00'::bytea, '2000-02-29', '12:34:56.789', NULL,
    '1999-12-31 23:59:59.999999', '2024-02-29 12:00:00.000001+05:30', '-1 days +02:00', NULL,
    'null', '"str"', NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, '{NULL}', '{NULL}', NULL, NULL, '{NULL}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO alltypes (id) VALUES (4);
INSERT INTO alltypes (id, c_numeric, c_double, c_real, c_text) VALUES
    (5, '0.000000000000000000000000000001', 1.7976931348623157e308, 1.4e-45, repeat('x', 10000)),
    (6, '123456789012345678901234567890.123456789012345678901234567890', 5e-324, 3.4028235e38, '\N');

-- A large transaction (COPY path) with escapes in text that COPY must keep.
BEGIN;
INSERT INTO alltypes (id, c_int, c_text, c_bytea, c_jsonb, c_tstz, c_numeric, c_text_arr, c_double)
SELECT g, g, E'row\t' || g || E'\n\\N\r' || repeat('é', g % 7), decode(lpad(to_hex(g), 8, '0'), 'hex'),
       jsonb_build_object('g', g, 's', E'a\tb'), '2020-01-01'::timestamptz + g * interval '1 second',
       g / 7.0, ARRAY[g::text, NULL, E'q"\\'], g * 0.1
FROM generate_series(100, 2099) g;
COMMIT;

-- Updates that touch every column, and ones that touch few.
UPDATE alltypes SET c_text = c_text || '!', c_numeric = c_numeric * 2, c_double = -c_double WHERE id >= 100 AND id % 3 = 0;
UPDATE alltypes SET (c_smallint, c_bool, c_date, c_json, c_mood, c_pair, c_posint) =
    (1, NOT coalesce(c_bool, false), '1970-01-01', '{"u": 1}', 'ok', ROW(9, NULL), 3) WHERE id <= 4;
UPDATE alltypes SET id = id + 10000 WHERE id IN (5, 6);
UPDATE alltypes SET c_text = NULL WHERE id = 1;
UPDATE alltypes SET c_text = '' WHERE id = 3;
DELETE FROM alltypes WHERE id >= 100 AND id % 5 = 0;
DELETE FROM alltypes WHERE id = 2;
