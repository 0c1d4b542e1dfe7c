-- A rerun that writes nothing. Equal checksums (10_rerun_checksums.sql) say
-- the rows are the same; this file checks that the rerun did not even
-- rewrite them with the same values. That matters for cost (no new row
-- versions to vacuum, no WAL, nothing for logical replication to ship) and
-- for anything that fires on a write (triggers, audit tables).
--
-- Three witnesses (the third, the run history, at the end of run 2):
-- * each row's physical identity: ctid (where the row version lives) and
--   xmin/xmax (which transaction wrote or locked it). A rewrite, even to the
--   same values, makes a new row version with a new ctid. Each run below
--   sits in its own savepoint, so a row written by run 2 would also carry
--   another xmin (a subtransaction's id) than one written by run 1.
-- * pg_stat_xact_user_tables: the rows this transaction has inserted,
--   updated and deleted so far, per table.
BEGIN;
\ir ../fixtures.sql

SELECT plan(8);

SAVEPOINT run_1;
CALL shop.load_day('2024-07-07');
RELEASE SAVEPOINT run_1;

-- Every row the job wrote (tableoid tells the report's partitions apart).
CREATE TEMP VIEW written_rows AS
  SELECT tableoid::regclass::text AS tbl, ctid::text AS row_ctid, xmin::text AS row_xmin,
         xmax::text AS row_xmax
    FROM shop.orders
  UNION ALL
  SELECT tableoid::regclass::text, ctid::text, xmin::text, xmax::text FROM shop.daily_revenue
  UNION ALL
  SELECT tableoid::regclass::text, ctid::text, xmin::text, xmax::text FROM shop.outbox;
-- The write counters of the job's tables and of idem's checkpoint table.
CREATE TEMP VIEW write_counts AS
  SELECT schemaname || '.' || relname AS tbl, n_tup_ins, n_tup_upd, n_tup_del
    FROM pg_stat_xact_user_tables
   WHERE schemaname = 'shop' OR (schemaname, relname) = ('idem', 'checkpoints');

CREATE TEMP TABLE rows_after_run_1 AS SELECT * FROM written_rows;
-- The last run recorded so far (idem.run_history: one row per bulk write).
CREATE TEMP TABLE last_run_1 AS SELECT coalesce(max(id), 0) AS id FROM idem.run_history;
CREATE TEMP TABLE counts_after_run_1 AS SELECT * FROM write_counts;

SELECT cmp_ok((SELECT count(*) FROM rows_after_run_1), '=', 11::bigint,
              'run 1 wrote 6 orders, 3 report rows and 2 notifications');

SAVEPOINT run_2;
CALL shop.load_day('2024-07-07');
RELEASE SAVEPOINT run_2;

SELECT set_eq('SELECT * FROM written_rows', 'SELECT * FROM rows_after_run_1',
              'run 2 left every row version in place (same ctid, xmin, xmax)');
SELECT set_eq('SELECT * FROM write_counts', 'SELECT * FROM counts_after_run_1',
              'run 2 inserted, updated and deleted no row, the checkpoint''s included');
-- A third witness, the one to read the morning after: the run history says
-- what run 2's bulk writes did (the outbox's claim_many and the checkpoint
-- are per-key functions, which it does not record).
SELECT results_eq(
  $$SELECT function_name, action, rows_written FROM idem.run_history
     WHERE id > (SELECT id FROM last_run_1) ORDER BY id$$,
  $$VALUES ('merge_query'::text, 'unchanged'::text, 0::bigint), ('overwrite_partition', 'skipped', 0)$$,
  'the run history says run 2 changed nothing: merge unchanged, partition skipped, 0 rows written');

-- Each step also says so itself. These calls are a third run, step by step.
SELECT results_eq(
  $$SELECT * FROM shop.load_orders('2024-07-07')$$,
  $$VALUES (0::bigint, 0::bigint, 0::bigint, 6::bigint, 0::bigint)$$,
  'merge: the 6 orders are unchanged (inserted, updated, deleted, unchanged, stale)');
SELECT results_eq(
  $$SELECT * FROM shop.build_daily_revenue('2024-07-07')$$,
  $$VALUES ('skipped'::text, 3::bigint)$$,
  'overwrite_partition: the same 3 rows, so the partition is skipped');
SELECT is(shop.queue_shipped_notifications('2024-07-07'), 0::bigint,
          'outbox: no notification queued again');
SELECT set_eq('SELECT * FROM written_rows', 'SELECT * FROM rows_after_run_1',
              'the step-by-step run left every row version in place too');

SELECT * FROM finish();
ROLLBACK;
