-- The customers' history: a rerun of a day's snapshot writes nothing (no
-- row version changes, no insert or update counted), a tier that goes from
-- NULL to a value is one new version (dbt-core#11235 added two), a deleted
-- customer's version is closed once, and no customer ever has two current
-- versions.
BEGIN;
SELECT plan(7);

INSERT INTO shop.customers VALUES (1, 'Ada', 'gold'), (2, 'Bo', NULL), (3, 'Cy', 'silver');

SELECT results_eq($$SELECT * FROM shop.snapshot_customers('2024-07-07')$$,
                  $$VALUES (3::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint)$$,
                  'day 1: three customers, three versions');

CREATE TEMP TABLE rows_after_day_1 AS SELECT ctid::text AS c, xmin::text AS x FROM shop.customers_history;
CREATE TEMP TABLE counts_after_day_1 AS
  SELECT n_tup_ins, n_tup_upd FROM pg_stat_xact_user_tables
   WHERE schemaname = 'shop' AND relname = 'customers_history';
SELECT results_eq($$SELECT * FROM shop.snapshot_customers('2024-07-07')$$,
                  $$VALUES (0::bigint, 0::bigint, 0::bigint, 3::bigint, 0::bigint)$$,
                  'the rerun of day 1 finds every customer unchanged');
SELECT set_eq($$SELECT ctid::text AS c, xmin::text AS x FROM shop.customers_history$$,
              $$SELECT c, x FROM rows_after_day_1$$,
              'the rerun rewrote no version (every ctid and xmin as before)');
SELECT results_eq($$SELECT n_tup_ins, n_tup_upd FROM pg_stat_xact_user_tables
                     WHERE schemaname = 'shop' AND relname = 'customers_history'$$,
                  $$SELECT * FROM counts_after_day_1$$,
                  'the rerun inserted and updated nothing');

UPDATE shop.customers SET tier = 'bronze' WHERE customer_id = 2;
DELETE FROM shop.customers WHERE customer_id = 3;
SELECT results_eq($$SELECT * FROM shop.snapshot_customers('2024-07-08')$$,
                  $$VALUES (0::bigint, 1::bigint, 1::bigint, 1::bigint, 0::bigint)$$,
                  'day 2: Bo''s tier from NULL to bronze is one change; Cy is closed');
SELECT results_eq($$SELECT tier, valid_from, valid_to FROM shop.customers_history
                    WHERE customer_id = 2 ORDER BY valid_from$$,
                  $$VALUES (NULL::text, '2024-07-08'::timestamptz, '2024-07-09'::timestamptz),
                           ('bronze', '2024-07-09'::timestamptz, NULL::timestamptz)$$,
                  'Bo has two versions that touch end to end');
SELECT is_empty($$SELECT customer_id FROM shop.customers_history WHERE valid_to IS NULL
                  GROUP BY customer_id HAVING count(*) > 1$$,
                'no customer has two current versions');

SELECT * FROM finish();
ROLLBACK;
