-- Overwrite the unit of work: overwrite_partition (mode 'rewrite') and
-- replace_where. (Mode 'swap' and swap_partition: swap_partition.sql.)
CREATE TABLE o_raw (day date, store text, amount numeric);
INSERT INTO o_raw SELECT '2024-07-06'::date + (g % 2), 's' || (g % 3), g FROM generate_series(1, 60) g;
CREATE TABLE o_sales (day date, store text, revenue numeric) PARTITION BY RANGE (day);
CREATE TABLE o_sales_0706 PARTITION OF o_sales FOR VALUES FROM ('2024-07-06') TO ('2024-07-07');
CREATE TABLE o_sales_0707 PARTITION OF o_sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE o_sales_other PARTITION OF o_sales DEFAULT;
-- The day is bound to the query's $1 (params, 0.9.0), never spliced into
-- its text; the job names the two columns it returns (overwrite_partition
-- returns more since 0.9.0, after these two).
CREATE FUNCTION o_job(d date) RETURNS TABLE(action text, row_count bigint) LANGUAGE sql AS $$
  SELECT action, row_count FROM idem.overwrite_partition('o_sales', d,
    'SELECT day, store, sum(amount) FROM o_raw WHERE day = $1 GROUP BY 1, 2', params => idem.params(d))
$$;

-- "The job for 7 July owns the partition for 7 July": rewritten, then a
-- rerun is skipped, writing nothing (no new row versions).
SELECT * FROM o_job('2024-07-07');
CREATE TABLE o_before AS SELECT ctid AS row_ctid, xmin::text AS row_xmin FROM o_sales_0707;
SELECT * FROM o_job('2024-07-07');
SELECT count(*) AS rows_rewritten FROM o_sales_0707 s
 WHERE NOT EXISTS (SELECT FROM o_before b WHERE b.row_ctid = s.ctid AND b.row_xmin = s.xmin::text);
SELECT * FROM o_job('2024-07-06');
SELECT tableoid::regclass AS partition, count(*) FROM o_sales GROUP BY 1 ORDER BY 1;
-- New data for the day: rewritten in place, the other partitions untouched.
UPDATE o_raw SET amount = amount + 1 WHERE day = '2024-07-07' AND store = 's1';
SELECT * FROM o_job('2024-07-07');
SELECT count(*) AS day_0706_untouched FROM o_sales_0706;
-- The text overload casts to the key's type.
SELECT * FROM idem.overwrite_partition('o_sales', '2024-07-07',
  $$SELECT day, store, sum(amount) FROM o_raw WHERE day = '2024-07-07' GROUP BY 1, 2$$) AS text_value;
-- A rerun through assert_rerun_safe proves it.
-- (The day is loaded already: run 1 changes nothing, which is expected here.)
SELECT count(*) AS checks FROM idem.assert_rerun_safe($$SELECT * FROM o_job('2024-07-07')$$, '{o_sales}', allow_unchanged => true);

-- Rows outside the partition, a value no partition (or only DEFAULT) holds.
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_sales', '2024-07-07',
  'SELECT day, store, sum(amount) FROM o_raw GROUP BY 1, 2')$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_sales', '2030-01-01'::date, 'SELECT NULL::date, NULL, NULL')$$);
SELECT count(*) AS nothing_changed FROM o_sales;
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_raw', '2024-07-07'::date, 'SELECT 1')$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_sales', '2024-07-07', 'SELECT 1')$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_sales', '2024-07-07', 'SELECT 1, 2, 3', mode => 'swap')$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_sales', '2024-07-07', 'SELECT 1, 2, 3', mode => 'replace')$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_sales', NULL::date, 'SELECT 1, 2, 3')$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_sales', 'not a date', 'SELECT 1, 2, 3')$$);
CREATE TABLE o_multi (a int, b int) PARTITION BY RANGE (a, b);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_multi', 1, 'SELECT 1, 1')$$);
-- Values convert as INSERT converts them (an assignment): a value too long
-- for varchar(n), char(n) or bit(n), or under a domain over varchar(n), is
-- an error (22001, 22026), never cut as CAST would cut it; nothing changes.
-- Trailing spaces beyond char(n) are dropped, as by INSERT.
CREATE DOMAIN o_short AS varchar(3);
CREATE TABLE o_len (day date NOT NULL, v varchar(3), c char(3), b bit(3), d o_short) PARTITION BY RANGE (day);
CREATE TABLE o_len_0707 PARTITION OF o_len FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
SELECT * FROM idem.overwrite_partition('o_len', '2024-07-07'::date,
  $$SELECT '2024-07-07'::date, 'abc'::text, 'ab   '::text, B'101', 'xyz'::text$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_len', '2024-07-07'::date,
  'SELECT ''2024-07-07''::date, ''abcd''::text, ''ab'', B''101'', ''xyz''')$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_len', '2024-07-07'::date,
  'SELECT ''2024-07-07''::date, ''abc''::text, ''abcd'', B''101'', ''xyz''', mode => 'swap')$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_len', '2024-07-07'::date,
  'SELECT ''2024-07-07''::date, ''abc''::text, ''ab'', B''1011'', ''xyz''')$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('o_len', '2024-07-07'::date,
  'SELECT ''2024-07-07''::date, ''abc''::text, ''ab'', B''101'', ''wxyz''')$$);
SELECT show_error($$SELECT * FROM idem.replace_where('o_len', 'true',
  'SELECT ''2024-07-07''::date, ''abcd''::text, ''ab'', B''101'', ''xyz''')$$);
SELECT v, c, length(c::text) AS c_len, b, d FROM o_len;
DROP TABLE o_len;
DROP DOMAIN o_short;

-- replace_where: the unit of work of a table that is not partitioned.
CREATE TABLE o_flat (day date, store text, revenue numeric);
SELECT * FROM idem.replace_where('o_flat', $$day = '2024-07-07'$$,
  $$SELECT day, store, sum(amount) FROM o_raw WHERE day = '2024-07-07' GROUP BY 1, 2$$);
SELECT * FROM idem.replace_where('o_flat', $$day = '2024-07-07'$$,
  $$SELECT day, store, sum(amount) FROM o_raw WHERE day = '2024-07-07' GROUP BY 1, 2$$) AS rerun_writes_nothing;
SELECT * FROM idem.replace_where('o_flat', $$day = '2024-07-06'$$,
  $$SELECT day, store, sum(amount) FROM o_raw WHERE day = '2024-07-06' GROUP BY 1, 2$$);
UPDATE o_raw SET amount = amount * 2 WHERE day = '2024-07-06' AND store = 's0';
SELECT * FROM idem.replace_where('o_flat', $$day = '2024-07-06'$$,
  $$SELECT day, store, sum(amount) FROM o_raw WHERE day = '2024-07-06' GROUP BY 1, 2$$) AS replaced;
SELECT day, count(*) FROM o_flat GROUP BY day ORDER BY day;
-- Every inserted row must satisfy the predicate; nothing changes otherwise.
SELECT show_error($$SELECT * FROM idem.replace_where('o_flat', 'day = ''2024-07-06''',
  'SELECT day, store, sum(amount) FROM o_raw GROUP BY 1, 2')$$);
SELECT count(*) AS still_six FROM o_flat;
SELECT show_error($$SELECT * FROM idem.replace_where('o_flat', '  ', 'SELECT 1')$$);
SELECT show_error($$SELECT * FROM idem.replace_where('o_flat', 'true', 'SELECT 1')$$);
SELECT show_error($$SELECT * FROM idem.replace_where('o_flat', 'true', 'SELECT 1, 2, ARRAY[1]')$$);
SELECT show_error($$SELECT * FROM idem.replace_where(NULL, 'true', 'SELECT 1')$$);
SELECT show_error($$SELECT * FROM idem.replace_where('o_flat', 'true', 'SELECT 1, 2, 3', lock_timeout => '0 seconds')$$);
-- Runs as the caller: without DELETE on the table, a permission error.
CREATE ROLE o_reader;
GRANT SELECT, INSERT ON o_flat, o_raw TO o_reader;
SET ROLE o_reader;
SELECT show_error($$SELECT * FROM idem.replace_where('o_flat', $q$day = '2024-07-06'$q$,
  $q$SELECT day, store, sum(amount) + 1 FROM o_raw WHERE day = '2024-07-06' GROUP BY 1, 2$q$)$$);
RESET ROLE;
REVOKE ALL ON o_flat, o_raw FROM o_reader;
DROP ROLE o_reader;

-- "The same rows" is decided on the values as the partition would store
-- them (the query cast to the columns' types), byte for byte: equal bytes
-- skip; any other difference rewrites, even between values that compare
-- equal (numeric 1.0 and 1.00, float8 0 and -0), which costs a rewrite and
-- never loses what the query said. Each case runs twice: the first call
-- writes, the rerun of the same query is skipped.
CREATE TABLE o_types (day date, t text, n numeric, m numeric(6,2), f float8, a text, b text, big text)
  PARTITION BY RANGE (day);
CREATE TABLE o_types_0707 PARTITION OF o_types FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE FUNCTION o_twice(what text, q text) RETURNS TABLE(label text, first_call text, rerun text)
LANGUAGE plpgsql AS $$
BEGIN
  label := what;
  SELECT action INTO first_call FROM idem.overwrite_partition('o_types', '2024-07-07'::date, q);
  SELECT action INTO rerun FROM idem.overwrite_partition('o_types', '2024-07-07'::date, q);
  RETURN NEXT;
END $$;
CREATE VIEW o_types_now AS
  SELECT t, n, m, f, a, b, length(big) AS big_len, pg_column_compression(big) IS NOT NULL AS big_compressed
  FROM o_types_0707 ORDER BY t;
SELECT * FROM o_twice('start', $$VALUES ('2024-07-07'::date, 'ab', 1.0, 1.5, 0.0::float8, 'x', 'y', NULL),
                                         ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
-- Text of another length, in any row.
SELECT * FROM o_twice('text length', $$VALUES ('2024-07-07'::date, 'abc', 1.0, 1.5, 0.0::float8, 'x', 'y', NULL),
                                               ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
-- numeric 1.00 = 1.0, but it is stored (and shown) differently: rewritten.
SELECT * FROM o_twice('numeric scale', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.5, 0.0::float8, 'x', 'y', NULL),
                                                 ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
SELECT n::text FROM o_types_0707 ORDER BY t;
-- A numeric(6,2) column stores the query's 1.499 as 1.50: the comparison
-- casts first, so 1.499, 1.5 and 1.500 all find the stored 1.50.
SELECT * FROM o_twice('typmod cast', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.499, 0.0::float8, 'x', 'y', NULL),
                                               ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
SELECT * FROM o_twice('typmod cast, same stored value', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.500, 0.0::float8, 'x', 'y', NULL),
                                                               ('2024-07-07', 'c', 2, 2.001, 1, NULL, '', NULL)$$);
-- float8 -0 = 0, different bits: rewritten.
SELECT * FROM o_twice('float -0', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.5, '-0'::float8, 'x', 'y', NULL),
                                            ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
-- NULL and the empty string differ; so does a NULL moved to another column.
SELECT * FROM o_twice('NULL for empty', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.5, '-0'::float8, 'x', 'y', NULL),
                                                  ('2024-07-07', 'c', 2, 2, 1, NULL, NULL, NULL)$$);
SELECT * FROM o_twice('empty for NULL', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.5, '-0'::float8, 'x', 'y', NULL),
                                                  ('2024-07-07', 'c', 2, 2, 1, '', NULL, NULL)$$);
SELECT * FROM o_twice('NULL moved', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.5, '-0'::float8, 'x', 'y', NULL),
                                              ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
-- Two text columns with their values swapped; values moved across a
-- column boundary ('x','y' against 'xy','').
SELECT * FROM o_twice('columns swapped', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.5, '-0'::float8, 'y', 'x', NULL),
                                                   ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
SELECT * FROM o_twice('boundary moved', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.5, '-0'::float8, 'yx', '', NULL),
                                                  ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
-- A row twice, and a row fewer.
SELECT * FROM o_twice('row twice', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.5, '-0'::float8, 'yx', '', NULL),
                                             ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL),
                                             ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
SELECT * FROM o_twice('row fewer', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.5, '-0'::float8, 'yx', '', NULL),
                                             ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
-- A long value: stored compressed in the partition, computed uncompressed by
-- the query. The same text is the same value, so the rerun is skipped; one
-- character changed deep inside it, or a 32 kB value that does not compress
-- (stored out of line), is seen.
SELECT * FROM o_twice('long value', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.5, '-0'::float8, 'yx', '', repeat('abcdefgh', 4000)),
                                              ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
SELECT big_len, big_compressed FROM o_types_now WHERE big_len IS NOT NULL;
SELECT * FROM o_twice('long value, one change', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.5, '-0'::float8, 'yx', '',
                                                          overlay(repeat('abcdefgh', 4000) placing 'X' from 20000)),
                                                         ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
SELECT * FROM o_twice('long value, incompressible', $$VALUES ('2024-07-07'::date, 'abc', 1.00, 1.5, '-0'::float8, 'yx', '',
                                                              (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 1000) g)),
                                                             ('2024-07-07', 'c', 2, 2, 1, NULL, '', NULL)$$);
SELECT big_len, big_compressed FROM o_types_now WHERE big_len IS NOT NULL;
SELECT * FROM o_types_now;
-- replace_where decides the same way.
CREATE TABLE o_types_flat (k int, n numeric, a text, b text);
SELECT * FROM idem.replace_where('o_types_flat', 'k = 1', $$SELECT 1, 1.0, 'x', NULL$$) AS first_call;
SELECT * FROM idem.replace_where('o_types_flat', 'k = 1', $$SELECT 1, 1.0, 'x', NULL$$) AS rerun;
SELECT * FROM idem.replace_where('o_types_flat', 'k = 1', $$SELECT 1, 1.00, 'x', NULL$$) AS numeric_scale;
SELECT * FROM idem.replace_where('o_types_flat', 'k = 1', $$SELECT 1, 1.00, NULL, 'x'$$) AS columns_swapped;
SELECT * FROM idem.replace_where('o_types_flat', 'k = 1', $$SELECT 1, 1.00, NULL, 'x'$$) AS rerun;
SELECT k, n::text, a, b FROM o_types_flat;

-- The query may read the unit it replaces (recompute it from itself): it
-- sees the rows as they were before the call, since the delete and the
-- insert are one statement. Nothing is lost.
CREATE TABLE o_self (day date NOT NULL, id int, v text) PARTITION BY RANGE (day);
CREATE TABLE o_self_0707 PARTITION OF o_self FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
INSERT INTO o_self VALUES ('2024-07-07', 1, 'a'), ('2024-07-07', 2, 'b'), ('2024-07-07', 2, 'b');
SELECT * FROM idem.overwrite_partition('o_self', '2024-07-07'::date,
  $$SELECT DISTINCT day, id, v FROM o_self WHERE day = '2024-07-07'$$) AS deduplicated_from_itself;
SELECT id, v FROM o_self ORDER BY id;
SELECT * FROM idem.overwrite_partition('o_self', '2024-07-07'::date,
  $$SELECT day, id, upper(v) FROM o_self_0707$$, mode => 'swap') AS swapped_from_itself;
SELECT id, v FROM o_self ORDER BY id;
CREATE TABLE o_self_flat (id int, v text);
INSERT INTO o_self_flat VALUES (1, 'a'), (2, 'b'), (3, 'other unit');
-- (Without a referencing foreign key the function first tries a DELETE and
-- then an INSERT, and keeps that only when the INSERT stored the rows it
-- compared; here the query read the deleted unit, so that attempt is rolled
-- back, triggers' work included, and one statement runs.)
CREATE TABLE o_self_audit (op text);
CREATE FUNCTION o_self_audit() RETURNS trigger LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO o_self_audit VALUES (TG_OP); RETURN NULL; END$$;
CREATE TRIGGER o_self_audit AFTER DELETE OR INSERT ON o_self_flat FOR EACH STATEMENT EXECUTE FUNCTION o_self_audit();
SELECT * FROM idem.replace_where('o_self_flat', 'id <= 2', $$SELECT id, v || 'x' FROM o_self_flat WHERE id <= 2$$)
  AS recomputed_from_itself;
SELECT * FROM o_self_flat ORDER BY id;
SELECT op, count(*) AS statements FROM o_self_audit GROUP BY op ORDER BY op;
-- A query that does not read the unit: the two statements stand.
TRUNCATE o_self_audit;
SELECT * FROM idem.replace_where('o_self_flat', 'id <= 2', $$VALUES (1, 'one'), (2, 'two')$$) AS from_elsewhere;
SELECT * FROM o_self_flat ORDER BY id;
SELECT op, count(*) AS statements FROM o_self_audit GROUP BY op ORDER BY op;
DROP TABLE o_self, o_self_flat, o_self_audit;
DROP FUNCTION o_self_audit();
