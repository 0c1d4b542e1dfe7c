-- Overwrite the unit of work: overwrite_partition (mode 'rewrite') and
-- replace_where. (Mode 'swap' and swap_partition: swap_partition.sql.)
CREATE TABLE o_raw (day date, store text, amount numeric);
INSERT INTO o_raw SELECT '2024-07-06'::date + (g % 2), 's' || (g % 3), g FROM generate_series(1, 60) g;
CREATE TABLE o_sales (day date, store text, revenue numeric) PARTITION BY RANGE (day);
CREATE TABLE o_sales_0706 PARTITION OF o_sales FOR VALUES FROM ('2024-07-06') TO ('2024-07-07');
CREATE TABLE o_sales_0707 PARTITION OF o_sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE o_sales_other PARTITION OF o_sales DEFAULT;
CREATE FUNCTION o_job(d date) RETURNS TABLE(action text, row_count bigint) LANGUAGE sql AS $$
  SELECT * FROM idem.overwrite_partition('o_sales', d,
    format('SELECT day, store, sum(amount) FROM o_raw WHERE day = %L GROUP BY 1, 2', d))
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
SELECT count(*) AS checks FROM idem.assert_rerun_safe($$SELECT * FROM o_job('2024-07-07')$$, '{o_sales}');

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
