-- A day without a partition (issue 44, item 4): the error's HINT gives the
-- exact CREATE TABLE ... PARTITION OF, with the width of the neighbouring
-- partitions, and create_partition => true makes it in the caller's
-- transaction (RANGE on one date or timestamp column; refused otherwise,
-- saying why).
CREATE TABLE cp_raw (day date, store text, amount numeric);
INSERT INTO cp_raw SELECT '2024-07-01'::date + d, 's' || g, d * 10 + g FROM generate_series(0, 40) d, generate_series(1, 3) g;
CREATE TABLE cp_sales (day date NOT NULL, store text NOT NULL, amount numeric CHECK (amount >= 0),
                       PRIMARY KEY (day, store)) PARTITION BY RANGE (day);
CREATE INDEX cp_sales_amount ON cp_sales (amount);
CREATE TABLE cp_sales_0707 PARTITION OF cp_sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE cp_sales_0708 PARTITION OF cp_sales FOR VALUES FROM ('2024-07-08') TO ('2024-07-09');
CREATE FUNCTION cp_job(d date, create_it boolean) RETURNS TABLE(action text, row_count bigint, rows_before bigint)
  LANGUAGE sql AS $$
  SELECT action, row_count, rows_before FROM idem.overwrite_partition('cp_sales', d,
    'SELECT day, store, amount FROM cp_raw WHERE day = $1', params => idem.params(d), create_partition => create_it)
$$;

-- After the last partition, before the first, and in a gap: the HINT.
SELECT show_error($$SELECT * FROM cp_job('2024-07-09', false)$$);
SELECT show_error($$SELECT * FROM cp_job('2024-07-01', false)$$);
CREATE TABLE cp_sales_0711 PARTITION OF cp_sales FOR VALUES FROM ('2024-07-11') TO ('2024-07-12');
SELECT show_error($$SELECT * FROM cp_job('2024-07-10', false)$$);

-- create_partition: made, loaded; the rerun skips; the run history says so.
SELECT * FROM cp_job('2024-07-09', true);
SELECT * FROM cp_job('2024-07-09', true);
SELECT * FROM cp_job('2024-07-01', true);
SELECT * FROM cp_job('2024-07-10', true);
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound,
       (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid) AS indexes,
       (SELECT count(*) FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'c') AS checks
  FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
 WHERE h.inhparent = 'cp_sales'::regclass ORDER BY 2;
SELECT tableoid::regclass AS partition, count(*) FROM cp_sales GROUP BY 1 ORDER BY 1;
SELECT action, counts FROM idem.run_history WHERE target = 'public.cp_sales' ORDER BY id;
-- The CHECK of the parent holds on the new partition.
SELECT show_error($$INSERT INTO cp_sales VALUES ('2024-07-09', 'neg', -1)$$);
-- Rolled back with the caller's transaction.
BEGIN;
SELECT * FROM cp_job('2024-07-20', true);
ROLLBACK;
SELECT to_regclass('cp_sales_20240720') AS rolled_back;
-- A partition name already taken by another table gets a suffix.
CREATE TABLE cp_sales_20240721 (x int);
SELECT * FROM cp_job('2024-07-21', true);
SELECT tableoid::regclass AS partition, count(*) FROM cp_sales WHERE day = '2024-07-21' GROUP BY 1;

-- A hostile search_path changes nothing: the functions and operators that
-- work out the bounds and the name are all schema-qualified.
CREATE SCHEMA cp_evil;
CREATE FUNCTION cp_evil.to_char(timestamp, text) RETURNS text LANGUAGE sql AS $$ SELECT 'evil' $$;
CREATE FUNCTION cp_evil.generate_series(timestamp, timestamp, interval) RETURNS SETOF timestamp
  LANGUAGE sql AS $$ SELECT '1999-01-01'::timestamp $$;
CREATE FUNCTION cp_evil.lt(date, date) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR cp_evil.< (LEFTARG = date, RIGHTARG = date, FUNCTION = cp_evil.lt);
SET search_path = cp_evil, public;
SELECT * FROM cp_job('2024-07-22', true);
RESET search_path;
SELECT tableoid::regclass AS partition, count(*) FROM cp_sales WHERE day = '2024-07-22' GROUP BY 1;
DROP SCHEMA cp_evil CASCADE;

-- Monthly partitions: whole months; timestamptz hourly partitions: hours
-- (stepped in UTC, whatever the session's time zone).
CREATE TABLE cp_monthly (day date NOT NULL, n int) PARTITION BY RANGE (day);
CREATE TABLE cp_monthly_2024_01 PARTITION OF cp_monthly FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
SELECT show_error($$SELECT * FROM idem.overwrite_partition('cp_monthly', '2024-03-15'::date, 'SELECT ''2024-03-15''::date, 1')$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('cp_monthly', '2023-11-30'::date, 'SELECT ''2023-11-30''::date, 1')$$);
SET TimeZone = 'Asia/Kolkata';
CREATE TABLE cp_hourly (at timestamptz NOT NULL, n int) PARTITION BY RANGE (at);
CREATE TABLE cp_hourly_first PARTITION OF cp_hourly FOR VALUES FROM ('2024-07-07 10:00+00') TO ('2024-07-07 11:00+00');
SELECT action, row_count FROM idem.overwrite_partition('cp_hourly', '2024-07-07 13:30+00'::timestamptz,
  'SELECT ''2024-07-07 13:30+00''::timestamptz, 1', create_partition => true);
RESET TimeZone;
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
 WHERE h.inhparent = 'cp_hourly'::regclass ORDER BY 2;

-- Refused, saying why: LIST, no neighbour to take the width from, the
-- DEFAULT partition holding rows of the range, a caller that does not own
-- the parent.
CREATE TABLE cp_list (region text NOT NULL, n int) PARTITION BY LIST (region);
CREATE TABLE cp_list_eu PARTITION OF cp_list FOR VALUES IN ('eu');
SELECT show_error($$SELECT * FROM idem.overwrite_partition('cp_list', 'us'::text, 'SELECT ''us'', 1', create_partition => true)$$);
CREATE TABLE cp_empty (day date NOT NULL, n int) PARTITION BY RANGE (day);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('cp_empty', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, 1', create_partition => true)$$);
CREATE TABLE cp_sales_default PARTITION OF cp_sales DEFAULT;
INSERT INTO cp_sales VALUES ('2024-07-25', 'late', 1);
SELECT show_error($$SELECT * FROM cp_job('2024-07-25', true)$$);
SELECT to_regclass('cp_sales_20240725') AS not_created;
CREATE ROLE cp_loader;
GRANT SELECT, INSERT, DELETE ON cp_sales TO cp_loader;
GRANT SELECT ON cp_raw TO cp_loader;
SET ROLE cp_loader;
SELECT show_error($$SELECT * FROM cp_job('2024-07-26', true)$$);
RESET ROLE;

DROP TABLE cp_raw, cp_sales, cp_sales_20240721, cp_monthly, cp_hourly, cp_list, cp_empty;
DROP FUNCTION cp_job(date, boolean);
DROP ROLE cp_loader;
