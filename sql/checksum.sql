-- idem.checksum / idem.checksum_query: an order-independent, duplicate-
-- sensitive digest of the multiset of rows (api.md section 5).
CREATE TABLE orders (id int PRIMARY KEY, customer text, amount numeric(10,2),
                     placed timestamptz, note text);
INSERT INTO orders
SELECT g, 'customer ' || (g % 17), (g * 7 % 1000) / 10.0,
       '2024-07-07 00:00+00'::timestamptz + g * interval '1 minute',
       CASE WHEN g % 5 = 0 THEN NULL WHEN g % 7 = 0 THEN repeat('long note ', 400) ELSE 'n' || g END
  FROM generate_series(1, 2000) g;
SELECT idem.checksum('orders') AS original \gset
SELECT :'original' ~ '^v1:2000:[0-9a-f]{32}$' AS well_formed;

-- Same rows, any physical order or storage: the same checksum.
CREATE TABLE orders_shuffled AS SELECT * FROM orders ORDER BY md5(id::text);
SELECT idem.checksum('orders_shuffled') = :'original' AS reordered;
VACUUM FULL orders;
SELECT idem.checksum('orders') = :'original' AS after_vacuum_full;
CREATE INDEX orders_customer ON orders (customer);
CLUSTER orders USING orders_customer;
SELECT idem.checksum('orders') = :'original' AS after_cluster;
ALTER TABLE orders ALTER COLUMN note SET COMPRESSION lz4;
UPDATE orders SET note = note || '' WHERE note IS NOT NULL;  -- rewrites the values with lz4
SELECT count(*) > 0 AS some_lz4 FROM orders WHERE pg_column_compression(note) = 'lz4';
SELECT idem.checksum('orders') = :'original' AS after_recompression;

-- Any change changes it: insert, delete, update, and a duplicated row.
BEGIN;
INSERT INTO orders VALUES (2001, 'x', 1, now(), NULL);
SELECT idem.checksum('orders') <> :'original' AS insert_detected;
ROLLBACK;
BEGIN;
DELETE FROM orders WHERE id = 1000;
SELECT idem.checksum('orders') <> :'original' AS delete_detected;
ROLLBACK;
BEGIN;
UPDATE orders SET amount = amount + 0.01 WHERE id = 1000;
SELECT idem.checksum('orders') <> :'original' AS update_detected;
ROLLBACK;
BEGIN;
UPDATE orders SET note = NULL WHERE id = 1001;  -- 'n1001' -> NULL
SELECT idem.checksum('orders') <> :'original' AS null_detected;
ROLLBACK;

-- Doubling and quadrupling every row: three distinct checksums (a sum, not
-- an XOR, so copies never cancel out), each with its row count.
CREATE TABLE doubled AS SELECT * FROM orders UNION ALL SELECT * FROM orders;
CREATE TABLE quadrupled AS SELECT * FROM doubled UNION ALL SELECT * FROM doubled;
SELECT split_part(idem.checksum('doubled'), ':', 2) AS doubled_rows,
       split_part(idem.checksum('quadrupled'), ':', 2) AS quadrupled_rows,
       count(DISTINCT c) AS distinct_checksums
  FROM unnest(ARRAY[:'original', idem.checksum('doubled'), idem.checksum('quadrupled')]) c;
-- A table with one row twice and one with that row once plus another: same
-- count, different checksum.
SELECT idem.checksum_query('VALUES (1), (1)') <> idem.checksum_query('VALUES (1), (2)') AS dup_vs_distinct,
       idem.checksum_query('VALUES (1), (1)') <> idem.checksum_query('SELECT WHERE false') AS pair_does_not_cancel;

-- Two rows that swap values between them: every column's multiset of values
-- is unchanged, the rows are not.
CREATE TABLE swap_a (k int, v text);
INSERT INTO swap_a VALUES (1, 'x'), (2, 'y');
CREATE TABLE swap_b (k int, v text);
INSERT INTO swap_b VALUES (1, 'y'), (2, 'x');
SELECT idem.checksum('swap_a') <> idem.checksum('swap_b') AS swap_detected;
-- Values moving between columns are a change too.
SELECT idem.checksum_query($$SELECT 'a' AS x, 'b' AS y$$) <> idem.checksum_query($$SELECT 'b', 'a'$$) AS column_swap_detected,
       idem.checksum_query($$SELECT 'ab' AS x, 'c' AS y$$) <> idem.checksum_query($$SELECT 'a', 'bc'$$) AS boundary_shift_detected;

-- Session settings change how values print, never what is hashed.
CREATE TABLE settings_t (d date, ts timestamp, tz timestamptz, f float8, r real, m money,
                         iv interval, n numeric, t time, ttz timetz);
INSERT INTO settings_t VALUES ('2024-07-07', '2024-07-07 12:34:56.789', '2024-07-07 12:34:56.789+00',
  0.1, 0.1, 12.34, '1 day 02:03:04', 3.14159, '12:34', '12:34+02');
SELECT idem.checksum('settings_t') AS settings_base \gset
SET TimeZone = 'Pacific/Chatham';
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = 'iso_8601';
SET extra_float_digits = -15;
SET lc_monetary = 'de_DE.UTF-8';
SET lc_numeric = 'de_DE.UTF-8';
SET lc_time = 'de_DE.UTF-8';
SELECT 12.34::money::text AS money_prints_differently;
SET bytea_output = 'escape';
SELECT idem.checksum('settings_t') = :'settings_base' AS same_under_other_settings;
SELECT idem.checksum('orders') = :'original' AS orders_same_under_other_settings;
RESET ALL;

-- exclude_columns leaves out volatile columns; unknown names are errors.
CREATE TABLE loads (id int, v text, loaded_at timestamptz);
INSERT INTO loads VALUES (1, 'a', '2024-01-01'), (2, 'b', '2024-01-01');
SELECT idem.checksum('loads', '{loaded_at}') AS without_loaded_at \gset
UPDATE loads SET loaded_at = '2025-01-01';
SELECT idem.checksum('loads', '{loaded_at}') = :'without_loaded_at' AS excluded_column_ignored,
       idem.checksum('loads', ARRAY['loaded_at', 'v']) <> :'without_loaded_at' AS fewer_columns_differ,
       idem.checksum('loads', ARRAY['id', 'v', 'loaded_at']) ~ '^v1:2:' AS all_excluded_still_counts;
SELECT idem.checksum('loads', '{LOADED_AT}');
SELECT idem.checksum('loads', ARRAY[NULL]::text[]);

-- Partitioned tables (every partition), views, materialized views and
-- tables with dropped columns.
CREATE TABLE sales (day date, store int, revenue numeric) PARTITION BY RANGE (day);
CREATE TABLE sales_2024_07_06 PARTITION OF sales FOR VALUES FROM ('2024-07-06') TO ('2024-07-07');
CREATE TABLE sales_2024_07_07 PARTITION OF sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE sales_other PARTITION OF sales DEFAULT;
INSERT INTO sales VALUES ('2024-07-06', 1, 10), ('2024-07-07', 1, 20), ('2024-07-07', 2, 30), ('2030-01-01', 1, 5);
SELECT idem.checksum('sales') = idem.checksum_query(
         'SELECT * FROM sales_2024_07_06 UNION ALL SELECT * FROM sales_2024_07_07 UNION ALL SELECT * FROM sales_other') AS partitioned_is_all_partitions,
       idem.checksum('sales') ~ '^v1:4:' AS counts_all;
CREATE VIEW big_orders AS SELECT id, amount FROM orders WHERE amount > 50;
CREATE MATERIALIZED VIEW big_orders_mv AS SELECT id, amount FROM orders WHERE amount > 50;
SELECT idem.checksum('big_orders') = idem.checksum('big_orders_mv') AS view_equals_matview,
       idem.checksum('big_orders') = idem.checksum_query('SELECT id, amount FROM orders WHERE amount > 50') AS view_equals_query;
-- The table's statement runs without JIT (at 10M rows compiling it cost
-- more than it saved and kept 10 MB): a view shows the setting it is read
-- under, and the caller's setting is back afterwards.
CREATE VIEW jit_seen AS SELECT current_setting('jit') AS jit;
SET jit = on;
SELECT idem.checksum('jit_seen') = idem.checksum_query($$SELECT 'off'::text$$) AS read_without_jit,
       current_setting('jit') AS caller_jit_after;
RESET jit;
CREATE TABLE dropped_col (a int, gone text, b text);
INSERT INTO dropped_col VALUES (1, 'x', 'one'), (2, 'y', 'two');
ALTER TABLE dropped_col DROP COLUMN gone;
CREATE TABLE never_had_it (a int, b text);
INSERT INTO never_had_it VALUES (2, 'two'), (1, 'one');
SELECT idem.checksum('dropped_col') = idem.checksum('never_had_it') AS dropped_columns_ignored;

-- Wrong input: clear errors with their SQLSTATE, nothing else.
SELECT show_error($$SELECT idem.checksum(NULL)$$);
SELECT show_error($$SELECT idem.checksum('orders', NULL)$$);
SELECT show_error($$SELECT idem.checksum('no_such_table')$$);
CREATE SEQUENCE a_sequence;
SELECT show_error($$SELECT idem.checksum('a_sequence')$$);
CREATE TYPE a_composite AS (x int);
SELECT show_error($$SELECT idem.checksum('a_composite'::regclass)$$);
SELECT show_error($$SELECT idem.checksum(0::oid::regclass)$$);
SELECT show_error($$SELECT idem.checksum_query(NULL)$$);
SELECT show_error($$SELECT idem.checksum_query('SELECT 1; SELECT 2')$$);
SELECT show_error($$SELECT idem.checksum_query('CREATE TABLE should_not_exist (x int)')$$);
SELECT show_error($$SELECT idem.checksum_query('SELEKT 1')$$);
SELECT show_error($$SELECT idem.checksum_query('')$$);
SELECT show_error($$SELECT idem.checksum_query('SELECT * FROM no_such_table')$$);
SELECT to_regclass('should_not_exist') IS NULL AS nothing_created;

-- A data-modifying statement with RETURNING returns rows: it runs, as the
-- caller, in the caller's transaction.
BEGIN;
SELECT idem.checksum_query('INSERT INTO loads VALUES (3, ''c'', now()) RETURNING id, v') =
       idem.checksum_query($$SELECT 3, 'c'$$) AS returning_rows;
SELECT count(*) AS rows_now FROM loads;
ROLLBACK;
SELECT count(*) AS rows_after_rollback FROM loads;
