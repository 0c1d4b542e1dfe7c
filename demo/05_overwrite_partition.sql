-- Part 5: the job owns its partition. The 2:47am run loads 7 July into the
-- partition for 7 July; the scheduler, having lost the acknowledgement,
-- runs it again at 2:49: nothing is written. Late orders arrive; the 6am
-- rerun rewrites the partition, and revenue is right - never doubled.
\pset footer off
\set ECHO none
CREATE TABLE sales_by_day (day date NOT NULL, store text NOT NULL, orders int, revenue numeric(12,2))
  PARTITION BY RANGE (day);
CREATE TABLE sales_by_day_0707 PARTITION OF sales_by_day FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE sales_by_day_0708 PARTITION OF sales_by_day FOR VALUES FROM ('2024-07-08') TO ('2024-07-09');
CREATE FUNCTION load_day(d date, how text DEFAULT 'rewrite') RETURNS TABLE(action text, row_count bigint)
LANGUAGE sql AS $f$
  SELECT action, row_count FROM idem.overwrite_partition('sales_by_day', d,
    format('SELECT day, store, count(*)::int, sum(amount) FROM raw_orders WHERE day = %L GROUP BY day, store', d),
    mode => how)
$f$;

\echo '== Part 5: idem.overwrite_partition - the job for 7 July owns the partition for 7 July'
\echo
\echo '-- 02:47 the nightly run'
SELECT * FROM load_day('2024-07-07');
SELECT sum(revenue) AS revenue_0707 FROM sales_by_day WHERE day = '2024-07-07' \gset
\echo '-- 02:49 the scheduler retries (lost acknowledgement): same rows, nothing written'
SELECT * FROM load_day('2024-07-07');
\echo '-- 05:30 two late orders for 7 July arrive'
INSERT INTO raw_orders (order_id, day, store, amount)
  SELECT max(order_id) + 1, '2024-07-07', 'store 1', 40 FROM raw_orders;
INSERT INTO raw_orders (order_id, day, store, amount)
  SELECT max(order_id) + 1, '2024-07-07', 'store 2', 60 FROM raw_orders;
\echo '-- 06:00 the rerun, this time building a new partition and swapping it in'
SELECT * FROM load_day('2024-07-07', 'swap');
SELECT :revenue_0707 AS revenue_at_0247, sum(revenue) AS revenue_now,
       (SELECT sum(amount) FROM raw_orders WHERE day = '2024-07-07') AS revenue_of_the_orders,
       CASE WHEN sum(revenue) = (SELECT sum(amount) FROM raw_orders WHERE day = '2024-07-07')
            THEN 'right' ELSE 'WRONG' END AS verdict
  FROM sales_by_day WHERE day = '2024-07-07';
\echo '-- and the 06:01 retry of the rerun: nothing written'
SELECT * FROM load_day('2024-07-07', 'swap');
\echo '-- 09:00 the morning after: what did each run do? (idem.run_history, written'
\echo '--       by each run in its own transaction)'
SELECT row_number() OVER (ORDER BY id) AS run, unit AS partition, action, counts, rows_written
  FROM idem.run_history WHERE target = 'public.sales_by_day' ORDER BY id;
\echo
