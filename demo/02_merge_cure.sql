-- Part 2: the cure for a keyed table. The same job, written as a merge on the
-- business key (day, store): the second run finds every row unchanged and
-- writes nothing.
\pset footer off
\set ECHO none
CREATE TABLE daily_sales_keyed (day date, store text, orders int, revenue numeric(12,2),
                                PRIMARY KEY (day, store));

\echo '== Part 2: the same job as idem.merge on the business key (day, store)'
\echo
\echo '-- run 1'
SELECT * FROM idem.merge_query('daily_sales_keyed',
  $q$SELECT day, store, count(*)::int AS orders, sum(amount) AS revenue
       FROM raw_orders WHERE day = '2024-07-07' GROUP BY day, store$q$);
SELECT idem.checksum('daily_sales_keyed') AS after_run_1 \gset
\echo '-- run 2 (the retry): every row unchanged, nothing written'
SELECT * FROM idem.merge_query('daily_sales_keyed',
  $q$SELECT day, store, count(*)::int AS orders, sum(amount) AS revenue
       FROM raw_orders WHERE day = '2024-07-07' GROUP BY day, store$q$);
SELECT sum(revenue) AS total_revenue, idem.checksum('daily_sales_keyed') AS checksum,
       CASE WHEN idem.checksum('daily_sales_keyed') = :'after_run_1' THEN 'rerun-safe'
            ELSE 'NOT rerun-safe' END AS verdict
  FROM daily_sales_keyed;

\echo '-- a late correction to one order: the rerun updates exactly the one store it touches'
UPDATE raw_orders SET amount = amount + 100 WHERE order_id = 3;
SELECT * FROM idem.merge_query('daily_sales_keyed',
  $q$SELECT day, store, count(*)::int AS orders, sum(amount) AS revenue
       FROM raw_orders WHERE day = '2024-07-07' GROUP BY day, store$q$);
SELECT sum(revenue) AS total_revenue FROM daily_sales_keyed;
\echo
