-- Part 1: the problem. A daily job loads yesterday's orders into daily_sales
-- with a plain INSERT. The scheduler loses the acknowledgement and runs it
-- again. Revenue doubles, and nothing complains.
\pset footer off
\set ECHO none
CREATE EXTENSION pg_idempotent;

CREATE TABLE raw_orders (order_id int PRIMARY KEY, day date, store text, amount numeric(10,2));
INSERT INTO raw_orders
SELECT g, date '2024-07-07', 'store ' || (g % 3 + 1), round((g * 37 % 500) / 10.0 + 5, 2)
  FROM generate_series(1, 300) g;

CREATE TABLE daily_sales (day date, store text, orders int, revenue numeric(12,2));

-- The job, as it was written: correct the first time it runs.
CREATE PROCEDURE load_daily_sales(for_day date) LANGUAGE sql AS $$
  INSERT INTO daily_sales
  SELECT day, store, count(*), sum(amount) FROM raw_orders WHERE day = for_day GROUP BY day, store;
$$;

\echo '== Part 1: a pipeline that does not survive being run twice'
\echo
\echo '-- run 1: CALL load_daily_sales(''2024-07-07'')'
CALL load_daily_sales('2024-07-07');
SELECT sum(revenue) AS total_revenue, idem.checksum('daily_sales') AS checksum FROM daily_sales;
SELECT idem.checksum('daily_sales') AS after_run_1 \gset
CREATE TABLE daily_sales_after_run_1 AS TABLE daily_sales;

\echo '-- the scheduler lost the acknowledgement and retries: run 2'
CALL load_daily_sales('2024-07-07');
SELECT sum(revenue) AS total_revenue, idem.checksum('daily_sales') AS checksum FROM daily_sales;

\echo '-- the checksum after run 2 differs from run 1 (v1:<rows>:<digest>):'
SELECT :'after_run_1' AS run_1, idem.checksum('daily_sales') AS run_2,
       CASE WHEN idem.checksum('daily_sales') = :'after_run_1' THEN 'rerun-safe'
            ELSE 'NOT rerun-safe: the second run changed the table' END AS verdict;

\echo '-- and idem.diff names the rows the second run added:'
SELECT side, copies, row_data FROM idem.diff('daily_sales', 'daily_sales_after_run_1') ORDER BY row_data->>'store';
\echo
