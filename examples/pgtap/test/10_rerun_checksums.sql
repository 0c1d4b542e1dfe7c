-- Rerun safety by checksum: run the job, checksum every table it writes, run
-- it again, compare. Equal checksums mean the same multiset of rows (the
-- same values as stored, duplicates counted), whatever the physical order.
--
-- The whole file is one transaction that is rolled back at the end, so it
-- leaves the database as it found it. Inside one transaction now() does not
-- move, so a column stamped with now() cannot differ between the runs here;
-- the checks still leave such columns out (exclude_columns), so that they
-- can be copied into tests whose runs commit separately.
BEGIN;
\ir ../fixtures.sql

SELECT plan(8);

-- Run 1, and a copy of each table as run 1 left it. The copies are only for
-- idem.diff, which names the differing rows when a check fails.
CALL shop.load_day('2024-07-07');
CREATE TEMP TABLE orders_run_1 AS TABLE shop.orders;
SELECT idem.checksum('shop.orders')                           AS orders_1,
       idem.checksum('shop.daily_revenue')                    AS revenue_1,
       idem.checksum('shop.outbox', exclude_columns => '{queued_at}') AS outbox_1
\gset

-- A rerun test only means something if run 1 did the right thing: a job
-- that writes nothing is rerun-safe too. So pin run 1's result first.
SELECT results_eq(
  $$SELECT day, store, orders, revenue FROM shop.daily_revenue ORDER BY day, store$$,
  $$VALUES ('2024-07-07'::date, 'store 1'::text, 2, 205.50::numeric(12,2)),
           ('2024-07-07', 'store 2', 2, 215.25),
           ('2024-07-07', 'store 3', 1, 42.00)$$,
  'run 1 builds the report for 2024-07-07 (version 2 of order 2 wins, the cancelled order is left out)');

-- Run 2: the scheduler lost the acknowledgement and runs the job again.
CALL shop.load_day('2024-07-07');

SELECT is(idem.checksum('shop.orders'), :'orders_1',
          'run 2 leaves shop.orders as run 1 did');
SELECT is(idem.checksum('shop.daily_revenue'), :'revenue_1',
          'run 2 leaves shop.daily_revenue as run 1 did');
SELECT is(idem.checksum('shop.outbox', exclude_columns => '{queued_at}'), :'outbox_1',
          'run 2 queues no notification twice');
-- Equal checksums already say it; on failure, this one lists the rows.
SELECT is_empty(
  $$SELECT * FROM idem.diff('shop.orders', 'orders_run_1')$$,
  'idem.diff finds no row that differs between run 1 and run 2');

-- The same check in one call: idem.assert_rerun_safe runs the job three
-- times, checksums the tables after each run, and raises ID002 naming the
-- first table that changed. It rolls its runs back afterwards. When a run
-- does change a table, the ID002 error (its DETAIL lists the rows) stops
-- the file here, and pg_prove reports the file as failed with that message.
SELECT results_eq(
  $$SELECT run, table_name::text, row_count
      FROM idem.assert_rerun_safe($j$CALL shop.load_day('2024-07-08')$j$,
                                  '{shop.orders, shop.daily_revenue, shop.outbox}',
                                  runs => 3, exclude_columns => '{queued_at}')$$,
  $$VALUES (1, 'shop.orders', 9::bigint), (1, 'shop.daily_revenue', 5), (1, 'shop.outbox', 3),
           (2, 'shop.orders', 9),         (2, 'shop.daily_revenue', 5), (2, 'shop.outbox', 3),
           (3, 'shop.orders', 9),         (3, 'shop.daily_revenue', 5), (3, 'shop.outbox', 3)$$,
  'assert_rerun_safe: three runs of the job for 2024-07-08 leave the same tables');
SELECT is(idem.checksum('shop.orders'), :'orders_1',
          'assert_rerun_safe rolled its runs back');

-- The check can fail: the report step written the usual way, appending,
-- is caught on its second run.
SELECT throws_ok(
  $$SELECT * FROM idem.assert_rerun_safe(
      $j$INSERT INTO shop.daily_revenue
         SELECT day, store, count(*), sum(amount) FROM shop.orders
          WHERE day = '2024-07-07' AND status <> 'cancelled' GROUP BY day, store$j$,
      '{shop.daily_revenue}')$$,
  'ID002', 'job is not rerun-safe: run 2 changed "shop.daily_revenue"',
  'an appending version of the report step is reported as not rerun-safe');

SELECT * FROM finish();
ROLLBACK;
