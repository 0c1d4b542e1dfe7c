-- idem.assert_rerun_safe: run a job several times, checksum the tables after
-- each run, and name the first table a later run changed.
CREATE TABLE raw_orders (order_id int, day date, store text, amount numeric);
INSERT INTO raw_orders SELECT g, '2024-07-07', 'store ' || (g % 3), g FROM generate_series(1, 30) g;
CREATE TABLE daily_sales (day date, store text, revenue numeric, PRIMARY KEY (day, store));
CREATE TABLE naive_sales (day date, store text, revenue numeric);
CREATE TABLE stamped (day date PRIMARY KEY, revenue numeric, loaded_at timestamptz);
CREATE TABLE numbered (id serial, day date UNIQUE, revenue numeric);
SELECT idem.checksum('daily_sales') AS before \gset

-- A job built on merge: rerun-safe. The rows of every run come back, and the
-- database is left as it was (the default rollback).
SELECT run, table_name, row_count, checksum = (SELECT checksum FROM idem.assert_rerun_safe(
         $$SELECT * FROM idem.merge_query('daily_sales',
           'SELECT day, store, sum(amount) AS revenue FROM raw_orders GROUP BY day, store')$$,
         '{daily_sales}') LIMIT 1) AS same_as_run_1
  FROM idem.assert_rerun_safe(
         $$SELECT * FROM idem.merge_query('daily_sales',
           'SELECT day, store, sum(amount) AS revenue FROM raw_orders GROUP BY day, store')$$,
         '{daily_sales}', runs => 3);
SELECT idem.checksum('daily_sales') = :'before' AS left_as_it_was;

-- A table named more than once is checksummed once per run, at its first
-- place: 2 runs x 2 tables, whatever the repeats.
SELECT run, table_name, row_count FROM idem.assert_rerun_safe(
  $$SELECT * FROM idem.merge_query('daily_sales',
    'SELECT day, store, sum(amount) AS revenue FROM raw_orders GROUP BY day, store')$$,
  ARRAY(SELECT 'daily_sales'::regclass FROM generate_series(1, 500))
    || 'naive_sales'::regclass || 'daily_sales'::regclass);

-- A procedure (CALL), a DO block and a statement list are all jobs.
CREATE PROCEDURE load_daily(d date) LANGUAGE sql AS $$
  SELECT * FROM idem.merge_query('daily_sales',
    format('SELECT day, store, sum(amount) AS revenue FROM raw_orders WHERE day = %L GROUP BY day, store', d));
$$;
SELECT count(*) AS checks FROM idem.assert_rerun_safe($$CALL load_daily('2024-07-07')$$, '{daily_sales}');
SELECT count(*) AS checks FROM idem.assert_rerun_safe(
  $job$DO $d$ BEGIN PERFORM idem.merge_query('daily_sales', 'SELECT ''2024-07-08''::date AS day, ''x'' AS store, 1 AS revenue'); END $d$$job$,
  '{daily_sales}');
-- A hand-written overwrite of the unit of work (delete + insert) is safe.
SELECT count(*) AS checks FROM idem.assert_rerun_safe(
  $$DELETE FROM naive_sales WHERE day = '2024-07-07';
    INSERT INTO naive_sales SELECT day, store, sum(amount) FROM raw_orders GROUP BY day, store$$,
  '{naive_sales}');
-- run_once: the second run does nothing.
SELECT count(*) AS checks FROM idem.assert_rerun_safe(
  $$SELECT idem.run_once('rerun_loader', 30, 'INSERT INTO naive_sales SELECT day, store, sum(amount) FROM raw_orders GROUP BY day, store')$$,
  '{naive_sales}');
SELECT idem.watermark('rerun_loader') IS NULL AS watermark_rolled_back_too;

-- What it must catch: the naive append...
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe(
  'INSERT INTO naive_sales SELECT day, store, sum(amount) FROM raw_orders GROUP BY day, store', '{naive_sales}')$$);
-- ...a job that stamps clock_timestamp() into a column (unless excluded)...
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe(
  'SELECT * FROM idem.merge_query(''stamped'', ''SELECT ''''2024-07-07''''::date AS day, 1 AS revenue, clock_timestamp() AS loaded_at'')',
  '{stamped}')$$) ~ '^ID002 \| job is not rerun-safe: run 2 changed "public.stamped"' AS stamp_caught;
SELECT count(*) AS passes_with_exclusion FROM idem.assert_rerun_safe(
  $$SELECT * FROM idem.merge_query('stamped', 'SELECT ''2024-07-07''::date AS day, 1 AS revenue, clock_timestamp() AS loaded_at')$$,
  '{stamped}', exclude_columns => '{loaded_at}');
-- ...a sequence value stamped into a column...
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe(
  'DELETE FROM numbered; INSERT INTO numbered (day, revenue) VALUES (''2024-07-07'', 1)', '{numbered}')$$)
  ~ '^ID002 \| job is not rerun-safe: run 2 changed "public.numbered"' AS sequence_caught;
SELECT count(*) AS passes_with_exclusion FROM idem.assert_rerun_safe(
  $$DELETE FROM numbered; INSERT INTO numbered (day, revenue) VALUES ('2024-07-07', 1)$$,
  '{numbered}', exclude_columns => '{id}');
-- ...and a job that deletes.
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe(
  'DELETE FROM raw_orders WHERE order_id = (SELECT min(order_id) FROM raw_orders)', '{raw_orders}', runs => 3)$$);
SELECT count(*) AS raw_orders_untouched FROM raw_orders;
-- The first table that differs is named, in the order given.
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe(
  'INSERT INTO naive_sales VALUES (''2024-01-01'', ''a'', 1); INSERT INTO stamped VALUES (''2024-01-01'', 1, NULL) ON CONFLICT DO NOTHING',
  '{stamped,naive_sales}')$$) ~ 'changed "public.naive_sales"' AS names_the_changed_table;

-- rollback => false keeps what the runs did (in the caller's transaction).
BEGIN;
SELECT count(*) AS checks FROM idem.assert_rerun_safe(
  $$SELECT * FROM idem.merge_query('daily_sales', 'SELECT day, store, sum(amount) AS revenue FROM raw_orders GROUP BY day, store')$$,
  '{daily_sales}', rollback => false);
SELECT count(*) AS kept FROM daily_sales;
ROLLBACK;

-- Sequences are not rolled back (nextval is not transactional); the docs say
-- why the function does not reset them.
SELECT last_value AS seq_before FROM numbered_id_seq \gset
SELECT count(*) FROM idem.assert_rerun_safe(
  $$DELETE FROM numbered; INSERT INTO numbered (day, revenue) VALUES ('2024-07-07', 1)$$, '{numbered}', exclude_columns => '{id}');
SELECT last_value > :seq_before AS sequence_moved FROM numbered_id_seq;

-- A job that fails: its error, and nothing left behind.
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe('INSERT INTO naive_sales VALUES (NULL, NULL, 1/0)', '{naive_sales}')$$);
SELECT count(*) AS naive_sales_empty FROM naive_sales;

-- Bad input.
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe(NULL, '{daily_sales}')$$);
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe('SELECT 1', NULL)$$);
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe('SELECT 1', '{}')$$);
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe('SELECT 1', '{daily_sales}', runs => 1)$$);
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe('  ;  ', '{daily_sales}')$$);
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe('SELECT 1', '{daily_sales}', exclude_columns => '{nope}')$$);
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe('SELECT 1', '{no_such_table}')$$);
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe('SELECT 1', ARRAY['daily_sales'::regclass, NULL])$$);

-- A proof that watched nothing change proves nothing (issue 42): a job that
-- writes another table than the ones named, or has nothing to do, leaves
-- them as they were after run 1, and that is ID007 (0.8.0 said rerun-safe).
CREATE TABLE written_elsewhere (n int);
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe('INSERT INTO written_elsewhere VALUES (1)', '{daily_sales}')$$);
-- A job with no new input is legitimately a no-op: allow_unchanged.
SELECT count(*) AS checks FROM idem.assert_rerun_safe('SELECT 1', '{daily_sales}', allow_unchanged => true);

-- A table the job creates (a first dbt run, a migration then a load):
-- created_tables names it; before run 1 it is absent, and every later run
-- must leave it as run 1 did. The runs are rolled back, the table with them.
SELECT run, row_count, checksum ~ '^v1:2:' AS two_rows
  FROM idem.assert_rerun_safe($$CREATE TABLE IF NOT EXISTS made_by_job (id int PRIMARY KEY);
                               INSERT INTO made_by_job VALUES (1), (2) ON CONFLICT DO NOTHING$$,
                             '{}', created_tables => '{made_by_job}');
SELECT to_regclass('made_by_job') IS NULL AS no_table_left;
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe('CREATE TABLE IF NOT EXISTS made_log (id int); INSERT INTO made_log VALUES (1)',
                                                         '{}', created_tables => '{made_log}')$$);
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe(
  'DO $do$ BEGIN IF to_regclass(''made_once'') IS NULL THEN CREATE TABLE made_once (id int); ELSE DROP TABLE made_once; END IF; END $do$',
  '{}', created_tables => '{made_once}')$$);
-- A table the job never creates is absent before and after run 1.
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe('SELECT 1', '{}', created_tables => '{never_made}')$$);
-- Watched by OID and by name together; the excluded column is checked
-- after run 1, when the created table has its columns.
SELECT count(*) AS checks FROM idem.assert_rerun_safe(
  $$CREATE TABLE IF NOT EXISTS made_stamped (id int PRIMARY KEY, loaded_at timestamptz);
    INSERT INTO made_stamped VALUES (1, clock_timestamp()) ON CONFLICT (id) DO UPDATE SET loaded_at = EXCLUDED.loaded_at;
    INSERT INTO naive_sales VALUES ('2024-07-07', 'x', 1)$$,
  '{daily_sales}', created_tables => '{made_stamped}', exclude_columns => '{loaded_at}');
-- The rows that differ show their columns in the table's order (0.8.0
-- showed jsonb's: shorter keys first, {"day": ..., "store": ...}).
CREATE TABLE column_order (store text, day date, revenue numeric, "a b" int);
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe(
  'INSERT INTO column_order VALUES (''store 1'', ''2024-07-07'', 12.50, 3)', '{column_order}')$$);
DROP TABLE column_order;
