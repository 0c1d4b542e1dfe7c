-- Overwrite and the proof on Citus (issue 25): replace_where,
-- overwrite_partition (rewrite and swap) and swap_partition on distributed tables from the
-- coordinator, their identical-rerun skip proven honest after a change made
-- directly on a worker's shard, and assert_rerun_safe of a merge job into a
-- distributed table (both runs rolled back).
SET citus.shard_count = 4;
SET client_min_messages = warning;

CREATE TABLE raw (day date, store int, amount numeric);
SELECT create_distributed_table('raw', 'store');
INSERT INTO raw SELECT date '2026-01-01' + g % 2, g % 5, g FROM generate_series(1, 100) g;

-- replace_where on a distributed table.
CREATE TABLE daily (day date, store int, revenue numeric, PRIMARY KEY (store, day));
SELECT create_distributed_table('daily', 'store', colocate_with => 'raw');
SELECT * FROM idem.replace_where('daily', 'store = 1',
  'SELECT day, store, sum(amount) AS revenue FROM raw WHERE store = 1 GROUP BY day, store');
SELECT * FROM idem.replace_where('daily', 'store = 1',
  'SELECT day, store, sum(amount) AS revenue FROM raw WHERE store = 1 GROUP BY day, store');
-- A change made on the worker, behind the coordinator's back: the rerun
-- sees it and writes the unit again.
SELECT count(*) FILTER (WHERE result = 'UPDATE 1') AS shards_changed
  FROM run_command_on_shards('daily', 'UPDATE %s SET revenue = revenue + 1 WHERE store = 1 AND day = ''2026-01-01''');
SELECT * FROM idem.replace_where('daily', 'store = 1',
  'SELECT day, store, sum(amount) AS revenue FROM raw WHERE store = 1 GROUP BY day, store');
SELECT day, revenue FROM daily ORDER BY day;

-- overwrite_partition on a distributed partitioned table: rewritten,
-- skipped, rewritten after a worker-side change, and swap mode.
CREATE TABLE sales_p (day date NOT NULL, store int NOT NULL, revenue numeric) PARTITION BY RANGE (day);
CREATE TABLE sales_p_0101 PARTITION OF sales_p FOR VALUES FROM ('2026-01-01') TO ('2026-01-02');
CREATE TABLE sales_p_0102 PARTITION OF sales_p FOR VALUES FROM ('2026-01-02') TO ('2026-01-03');
SELECT create_distributed_table('sales_p', 'store', colocate_with => 'raw');
SELECT * FROM idem.overwrite_partition('sales_p', date '2026-01-01',
  'SELECT day, store, sum(amount) AS revenue FROM raw WHERE day = ''2026-01-01'' GROUP BY day, store');
SELECT * FROM idem.overwrite_partition('sales_p', date '2026-01-01',
  'SELECT day, store, sum(amount) AS revenue FROM raw WHERE day = ''2026-01-01'' GROUP BY day, store');
SELECT count(*) FILTER (WHERE result = 'UPDATE 1') AS shards_changed
  FROM run_command_on_shards('sales_p_0101', 'UPDATE %s SET revenue = revenue + 1 WHERE store = 2');
SELECT * FROM idem.overwrite_partition('sales_p', date '2026-01-01',
  'SELECT day, store, sum(amount) AS revenue FROM raw WHERE day = ''2026-01-01'' GROUP BY day, store');
SELECT * FROM idem.overwrite_partition('sales_p', date '2026-01-02',
  'SELECT day, store, sum(amount) AS revenue FROM raw WHERE day = ''2026-01-02'' GROUP BY day, store', mode => 'swap');
SELECT * FROM idem.overwrite_partition('sales_p', date '2026-01-02',
  'SELECT day, store, sum(amount) * 2 AS revenue FROM raw WHERE day = ''2026-01-02'' GROUP BY day, store', mode => 'swap');
SELECT * FROM idem.overwrite_partition('sales_p', date '2026-01-02',
  'SELECT day, store, sum(amount) * 2 AS revenue FROM raw WHERE day = ''2026-01-02'' GROUP BY day, store', mode => 'swap');
SELECT day, count(*), sum(revenue) FROM sales_p GROUP BY day ORDER BY day;
SELECT idem.checksum('sales_p') = idem.checksum_query(
  'SELECT day, store, sum(amount) * CASE WHEN day = ''2026-01-02'' THEN 2 ELSE 1 END AS revenue FROM raw GROUP BY day, store')
  AS as_the_queries_say;

-- swap_partition: a colocated distributed staging table takes the
-- partition's place, readers see its rows.
CREATE TABLE sp (day date NOT NULL, store int NOT NULL, revenue numeric) PARTITION BY RANGE (day);
CREATE TABLE sp_0101 PARTITION OF sp FOR VALUES FROM ('2026-01-01') TO ('2026-01-02');
SELECT create_distributed_table('sp', 'store', colocate_with => 'raw');
INSERT INTO sp SELECT '2026-01-01', g, g FROM generate_series(1, 5) g;
CREATE TABLE sp_stage (day date NOT NULL, store int NOT NULL, revenue numeric);
SELECT create_distributed_table('sp_stage', 'store', colocate_with => 'raw');
INSERT INTO sp_stage SELECT '2026-01-01', g, g * 10 FROM generate_series(1, 5) g;
SELECT * FROM idem.swap_partition('sp_0101', 'sp_stage');
SELECT count(*), sum(revenue) FROM sp;

-- assert_rerun_safe of a merge job into a distributed table: two runs, the
-- same checksum, and the table as it was before (both rolled back).
CREATE TABLE totals (store int PRIMARY KEY, revenue numeric);
SELECT create_distributed_table('totals', 'store', colocate_with => 'raw');
SELECT run, table_name, row_count FROM idem.assert_rerun_safe(
  $$SELECT * FROM idem.merge_query('totals', 'SELECT store, sum(amount) AS revenue FROM raw GROUP BY store')$$, '{totals}');
SELECT count(*) AS totals_rows FROM totals;
-- A job that is not rerun-safe on shards is caught (ID002), and its rows
-- are rolled back on every shard.
CREATE TABLE log (id bigserial, store int, note text);
SELECT create_distributed_table('log', 'store', colocate_with => 'raw');
DO $$
BEGIN
  PERFORM * FROM idem.assert_rerun_safe($j$INSERT INTO log (store, note) SELECT store, 'again' FROM raw WHERE amount < 3$j$, '{log}');
  RAISE NOTICE 'not caught';
EXCEPTION WHEN OTHERS THEN
  RAISE WARNING 'caught: %', SQLSTATE;
END $$;
SELECT count(*) AS log_rows FROM log;
