-- The one definition of "the same row" (docs/row-image.md): pinned v1
-- digests of known values of the built-in types, and the cases the contract
-- names. A digest changing here means the format changed: that is a new
-- format version (v2), never an edit of this file.
SET lc_monetary = 'C';

-- One row, one column: checksum_query of it is "v1:1:<the row's digest>".
-- Every type here has an image that does not depend on the database (no
-- type OIDs inside); enums, composites and arrays of them do (see below).
CREATE TABLE samples (type_name text, literal text);
INSERT INTO samples VALUES
  ('boolean', 'true'), ('"char"', 'x'), ('smallint', '-7'), ('integer', '42'),
  ('bigint', '9007199254740993'), ('real', '1.5'), ('double precision', '-2.25'),
  ('numeric', '1.0'), ('numeric', '1.00'), ('money', '12.34'), ('oid', '1259'),
  ('text', 'abc'), ('character varying(10)', 'abc'), ('character(5)', 'abc'),
  ('name', 'abc'), ('bytea', '\x00ff10'), ('date', '2024-07-07'),
  ('time', '12:34:56.789'), ('time with time zone', '12:34:56+02'),
  ('timestamp', '2024-07-07 12:00:00'), ('timestamp with time zone', '2024-07-07 12:00:00+00'),
  ('interval', '1 year 2 mons 3 days 04:05:06'), ('uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
  ('inet', '192.168.0.1/24'), ('cidr', '10.0.0.0/8'), ('macaddr', '08:00:2b:01:02:03'),
  ('macaddr8', '08:00:2b:01:02:03:04:05'), ('bit(4)', '1010'), ('bit varying', '101'),
  ('point', '(1,2)'), ('line', '{1,2,3}'), ('lseg', '[(0,0),(1,1)]'), ('box', '(1,1),(0,0)'),
  ('path', '[(0,0),(1,1),(2,0)]'), ('polygon', '((0,0),(1,1),(1,0))'), ('circle', '<(0,0),1>'),
  ('json', '{"b": 1, "a": [1, 2]}'), ('jsonb', '{"b": 1, "a": [1, 2]}'), ('jsonpath', '$.a[*] ? (@ > 1)'),
  ('xml', '<a>1</a>'), ('tsvector', 'a fat cat'), ('tsquery', 'fat & cat'),
  ('int4range', '[1,10)'), ('numrange', '[1.5,2.5]'), ('daterange', '[2024-01-01,2024-02-01)'),
  ('tstzrange', '[2024-01-01 00:00+00,2024-01-02 00:00+00)'), ('int8range', '(,5]'),
  ('int4multirange', '{[1,3), [5,7)}'), ('pg_lsn', '16/B374D848'), ('xid8', '12345'),
  ('pg_snapshot', '10:20:10,14,15'), ('integer[]', '{1,2,NULL,4}'), ('text[]', '{a,"b c",NULL}'),
  ('int2vector', '1 2 3'), ('oidvector', '23 25'), ('regclass', 'pg_class'), ('regtype', 'integer'),
  ('tid', '(1,2)');

-- Each literal is cast in SQL the extension does not write: format() builds
-- "SELECT $1::type" with the literal as a parameter.
CREATE FUNCTION digest_of(type_name text, literal text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE result text;
BEGIN
  EXECUTE format('SELECT idem.checksum_query(%L)',
                 format('SELECT %L::%s', literal, type_name)) INTO result;
  RETURN result;
END $$;

SELECT type_name, literal, digest_of(type_name, literal) AS digest
  FROM samples ORDER BY type_name, literal;

-- NULL of any type is one image; NULL and '' differ; zero columns is a row.
SELECT idem.checksum_query('SELECT NULL::int') AS null_int,
       idem.checksum_query('SELECT NULL::text') AS null_text,
       idem.checksum_query($$SELECT ''::text$$) AS empty_text,
       idem.checksum_query('SELECT') AS zero_columns,
       idem.checksum_query('SELECT WHERE false') AS no_rows;

-- These three are also pinned by the C++ unit tests, which build the image
-- bytes by hand (test/unit/test_row_image.cpp): server and core agree.
SELECT idem.checksum_query('SELECT 42::int4') AS int4_42,
       idem.checksum_query($$SELECT 'abc'::text$$) AS text_abc,
       idem.checksum_query('SELECT NULL::int4') AS null_col;

-- Values that are equal (=) but not the same: every one is a change.
SELECT digest_of('numeric', '1.0') = digest_of('numeric', '1.00') AS numeric_scale_same,
       digest_of('double precision', '0') = digest_of('double precision', '-0') AS float_zero_sign_same,
       digest_of('real', '0') = digest_of('real', '-0') AS real_zero_sign_same,
       digest_of('jsonb', '{"a":1, "b":2}') = digest_of('jsonb', '{"b":2,"a":1}') AS jsonb_key_order_same,
       digest_of('json', '{"a":1, "b":2}') = digest_of('json', '{"b":2,"a":1}') AS json_key_order_same,
       digest_of('timestamptz', '2024-01-01 01:00+01') = digest_of('timestamptz', '2024-01-01 00:00+00') AS same_instant_same,
       digest_of('character(5)', 'abc') = digest_of('character(5)', 'abc  ') AS bpchar_padding_same,
       digest_of('text', 'abc') = digest_of('text', 'abc ') AS text_trailing_space_same,
       digest_of('double precision', 'NaN') = digest_of('double precision', 'NaN') AS nan_same;

-- A case-insensitive collation makes 'a' = 'A', but they are stored
-- differently, and *= (and so the checksum) tells them apart.
CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT x.v = y.v AS equal_under_collation,
       x *= y AS image_equal,
       idem.checksum_query($$SELECT 'a'::text COLLATE case_insensitive$$) =
       idem.checksum_query($$SELECT 'A'::text COLLATE case_insensitive$$) AS checksum_equal
  FROM (SELECT 'a'::text COLLATE case_insensitive AS v) x,
       (SELECT 'A'::text COLLATE case_insensitive AS v) y;

-- The varlena header form and TOAST compression are not part of the image:
-- the same long value stored compressed, uncompressed out of line, and
-- inline (short header) gives one digest.
CREATE TABLE toast_main (v text);
CREATE TABLE toast_external (v text);
ALTER TABLE toast_external ALTER COLUMN v SET STORAGE EXTERNAL;
CREATE TABLE toast_lz4 (v text COMPRESSION lz4);
INSERT INTO toast_main SELECT repeat('pg_idempotent ', 2000);
INSERT INTO toast_external SELECT repeat('pg_idempotent ', 2000);
INSERT INTO toast_lz4 SELECT repeat('pg_idempotent ', 2000);
SELECT pg_column_size(m.v) < 28000 AS main_compressed,
       pg_column_size(e.v) >= 28000 AS external_uncompressed,
       pg_column_compression(m.v) AS main_method, pg_column_compression(l.v) AS lz4_method
  FROM toast_main m, toast_external e, toast_lz4 l;
SELECT idem.checksum('toast_main') = idem.checksum('toast_external') AS main_vs_external,
       idem.checksum('toast_main') = idem.checksum('toast_lz4') AS main_vs_lz4,
       idem.checksum('toast_main') = idem.checksum_query($$SELECT repeat('pg_idempotent ', 2000)$$) AS stored_vs_computed;

-- Types whose image holds a type OID (enums store the label's OID,
-- composites their row type's OID): equal within a database, documented as
-- database-specific across databases.
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE pair AS (a int, b text);
SELECT idem.checksum_query($$SELECT 'ok'::mood$$) = idem.checksum_query($$SELECT 'ok'::mood$$) AS enum_stable,
       idem.checksum_query($$SELECT 'ok'::mood$$) <> idem.checksum_query($$SELECT 'sad'::mood$$) AS enum_distinct,
       idem.checksum_query($$SELECT ROW(1, 'x')::pair$$) = idem.checksum_query($$SELECT ROW(1, 'x')::pair$$) AS composite_stable,
       idem.checksum_query($$SELECT ARRAY[ROW(1, 'x')::pair]$$) <> idem.checksum_query($$SELECT ARRAY[ROW(1, 'y')::pair]$$) AS composite_array_distinct;
