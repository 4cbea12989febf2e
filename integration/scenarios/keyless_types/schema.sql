-- A table without a key, every built-in type family: UPDATE and DELETE
-- find rows by the whole old row (REPLICA IDENTITY FULL), so every type
-- must compare equal to its own old value on the target: bool prints "t"
-- but casts to text as "true", inet drops no "/32" in its cast, char(n)
-- loses its padding, point and json have no equality at all, and 1.0 and
-- 1.00 are equal numerics that are not the same value.
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'ünïcödé 😀');
CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
CREATE TYPE pair AS (a integer, b text);

CREATE TABLE kl (
    id          integer,
    c_smallint  smallint,
    c_int       integer,
    c_bigint    bigint,
    c_numeric   numeric,
    c_num_ps    numeric(12,4),
    c_real      real,
    c_double    double precision,
    c_money     money,
    c_bool      boolean,
    c_char      char(5),
    c_varchar   varchar(20),
    c_text      text,
    c_name      name,
    c_qchar     "char",
    c_bytea     bytea,
    c_date      date,
    c_time      time,
    c_timetz    time with time zone,
    c_ts        timestamp,
    c_tstz      timestamptz,
    c_interval  interval,
    c_uuid      uuid,
    c_json      json,
    c_jsonb     jsonb,
    c_xml       xml,
    c_inet      inet,
    c_cidr      cidr,
    c_macaddr   macaddr,
    c_macaddr8  macaddr8,
    c_bit       bit(4),
    c_varbit    varbit(16),
    c_point     point,
    c_line      line,
    c_lseg      lseg,
    c_box       box,
    c_path      path,
    c_polygon   polygon,
    c_circle    circle,
    c_tsvector  tsvector,
    c_tsquery   tsquery,
    c_int_arr   integer[],
    c_text_arr  text[],
    c_2d_arr    integer[][],
    c_mood      mood,
    c_mood_arr  mood[],
    c_posint    posint,
    c_pair      pair,
    c_int4range int4range,
    c_numrange  numrange,
    c_tstzrange tstzrange,
    c_daterange daterange,
    c_multirange int4multirange,
    c_oid       oid,
    c_pg_lsn    pg_lsn
);
ALTER TABLE kl REPLICA IDENTITY FULL;
-- Pairs of rows that differ only in values their types call equal.
CREATE TABLE near (tag text, n numeric, f float8, i interval, j jsonb, a numeric[]);
ALTER TABLE near REPLICA IDENTITY FULL;
