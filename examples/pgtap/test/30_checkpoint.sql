-- The checkpoint travels with the data. The job's last step,
-- idem.advance('shop.load_day', day), runs in the job's transaction: the
-- day's data and the checkpoint commit together or not at all, a rerun of
-- the same day leaves the checkpoint where it is, and a stale run of an older
-- day fails and takes its data writes with it.
BEGIN;
\ir ../fixtures.sql

SELECT plan(13);

CALL shop.load_day('2024-07-07');
-- Watermarks are typed: read it back as a date, not as text.
SELECT is(idem.watermark('shop.load_day', NULL::date), '2024-07-07'::date,
          'the job for 2024-07-07 moves the checkpoint to 2024-07-07');

CALL shop.load_day('2024-07-07');
SELECT is(idem.watermark('shop.load_day', NULL::date), '2024-07-07'::date,
          'its rerun leaves the checkpoint where it was');

CALL shop.load_day('2024-07-08');
SELECT is(idem.watermark('shop.load_day', NULL::date), '2024-07-08'::date,
          'the next day moves it on');

-- A late correction to order 4 (a new version) lands in the extract for
-- 2024-07-07, and a confused scheduler reruns that older day. The merge
-- would apply the correction, but the checkpoint refuses to move back, so
-- the whole run fails and nothing of it stays.
INSERT INTO shop.raw_orders VALUES (4, 2, '2024-07-07', 'store 2', 25.25, 'new');
SELECT idem.checksum('shop.daily_revenue') AS revenue_before_stale_run \gset
SELECT throws_ok(
  $$CALL shop.load_day('2024-07-07')$$,
  '22023', 'watermark of job "shop.load_day" would move backwards from 2024-07-08 to 2024-07-07',
  'a stale run of an older day fails');
SELECT is((SELECT version FROM shop.orders WHERE order_id = 4), 1,
          'the stale run''s merge rolled back with it: order 4 is still version 1');
SELECT is(idem.checksum('shop.daily_revenue'), :'revenue_before_stale_run',
          'and the report is unchanged');
SELECT is(idem.watermark('shop.load_day', NULL::date), '2024-07-08'::date,
          'and the checkpoint is unchanged');

-- Reloading an older day on purpose: rewind (recorded in idem.checkpoint_log),
-- then run it. Exactly the corrected order is updated.
SELECT lives_ok($$SELECT idem.rewind('shop.load_day', '2024-07-07'::date)$$,
                'an explicit rewind to 2024-07-07');
SELECT results_eq(
  $$SELECT * FROM shop.load_orders('2024-07-07')$$,
  $$VALUES (0::bigint, 1::bigint, 0::bigint, 5::bigint, 0::bigint)$$,
  'after a rewind, the reload updates the one corrected order and leaves 5 unchanged');
CALL shop.load_day('2024-07-07');
SELECT results_eq(
  $$SELECT store, revenue FROM shop.daily_revenue WHERE day = '2024-07-07' ORDER BY store$$,
  $$VALUES ('store 1'::text, 205.50::numeric(12,2)), ('store 2', 225.25), ('store 3', 42.00)$$,
  'the report for 2024-07-07 has the corrected amount');
CALL shop.load_day('2024-07-08');
SELECT is(idem.watermark('shop.load_day', NULL::date), '2024-07-08'::date,
          'running 2024-07-08 again brings the checkpoint forward');

-- An extract that failed upstream arrives empty. The merge is a complete
-- snapshot of the day (delete_missing), so an empty one would delete the
-- whole day: it is refused, and nothing moves.
SELECT throws_ok(
  $$CALL shop.load_day('2024-07-09')$$,
  '22023', 'the source is empty and delete_missing would delete every target row in scope',
  'an empty extract is an error, not a wiped day');
SELECT is(idem.watermark('shop.load_day', NULL::date), '2024-07-08'::date,
          'the failed run did not move the checkpoint');

SELECT * FROM finish();
ROLLBACK;
