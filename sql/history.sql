-- The run history: every run of a bulk writing function leaves one row in
-- idem.run_log, in the caller's transaction; idem.run_history shows each role
-- its own runs; idem.history chooses which runs; purge_history retains.
-- Earlier files ran functions too: start from an empty log.
DELETE FROM idem.run_log;
CREATE VIEW h_last AS
  SELECT function_name, target, unit, action, counts, rows_written, role_name
    FROM idem.run_history ORDER BY id;

-- merge: the first run inserts, the rerun (the 2:47am retry) changes nothing
-- and says so: unchanged = 3, 0 rows written.
CREATE TABLE h_orders (id int PRIMARY KEY, amount numeric);
CREATE TABLE h_batch (id int, amount numeric);
INSERT INTO h_batch VALUES (1, 10), (2, 20), (3, 30);
SELECT * FROM idem.merge('h_orders', 'h_batch');
SELECT * FROM idem.merge('h_orders', 'h_batch');
UPDATE h_batch SET amount = 21 WHERE id = 2;
SELECT * FROM idem.merge_query('h_orders', 'SELECT id, amount FROM h_batch', delete_missing => true);
SELECT * FROM h_last;
-- What a user asks: what did the rerun do?
SELECT action, counts->>'unchanged' AS unchanged, rows_written
  FROM idem.run_history WHERE target = 'public.h_orders' ORDER BY id OFFSET 1 LIMIT 1;

-- The row belongs to the run's transaction: its id, a duration, a time
-- inside the transaction, the roles and the application.
SET application_name = 'nightly_orders';
BEGIN;
SELECT count(*) AS merged FROM idem.merge('h_orders', 'h_batch');
SELECT transaction_id = pg_current_xact_id() AS same_transaction,
       started_at >= transaction_timestamp() AND finished_at <= clock_timestamp() AS timed_inside,
       duration > '0' AND duration < '1 minute' AS duration_measured,
       role_name = current_user AND session_role = session_user AS roles,
       application_name, backend_pid = pg_backend_pid() AS same_backend
  FROM idem.run_history ORDER BY id DESC LIMIT 1;
COMMIT;
RESET application_name;

-- A rolled-back run, a failed run and a dry run leave no row.
SELECT count(*) AS runs_before FROM idem.run_log \gset
BEGIN;
UPDATE h_batch SET amount = 22 WHERE id = 2;
SELECT * FROM idem.merge('h_orders', 'h_batch');
ROLLBACK;
INSERT INTO h_batch VALUES (1, 99);
SELECT show_error($$SELECT * FROM idem.merge('h_orders', 'h_batch')$$);
DELETE FROM h_batch WHERE amount = 99;
UPDATE h_batch SET amount = 23 WHERE id = 2;
SELECT * FROM idem.merge('h_orders', 'h_batch', dry_run => true);
SELECT count(*) - :runs_before AS new_runs FROM idem.run_log;

-- idem.history: 'changes' records only runs that changed something, so a
-- no-op rerun writes nothing at all; 'off' records nothing.
SET idem.history = changes;
SELECT * FROM idem.merge('h_orders', 'h_batch');   -- changes amount 23: recorded
SELECT * FROM idem.merge('h_orders', 'h_batch');   -- no-op: not recorded
SELECT count(*) - :runs_before AS new_runs FROM idem.run_log;
BEGIN;
SELECT * FROM idem.merge('h_orders', 'h_batch');
SELECT pg_current_xact_id_if_assigned() IS NULL AS no_transaction_id;
COMMIT;
SET idem.history = off;
UPDATE h_batch SET amount = 24 WHERE id = 2;
SELECT * FROM idem.merge('h_orders', 'h_batch');
SELECT count(*) - :runs_before AS new_runs FROM idem.run_log;
SET idem.history = on;     -- a boolean habit: the same as all
SHOW idem.history;
RESET idem.history;
SHOW idem.history;
SELECT show_error($$SET idem.history = 'sometimes'$$);
SELECT show_error($$SET idem.histroy = off$$);

-- Every bulk writing function records; the unit is what it replaced.
CREATE TABLE h_days (day date, n int) PARTITION BY RANGE (day);
CREATE TABLE h_days_0707 PARTITION OF h_days FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
INSERT INTO h_days VALUES ('2024-07-07', 1), ('2024-07-07', 2);
CREATE TABLE h_plain (day date, n int);
INSERT INTO h_plain VALUES ('2024-07-07', 1);
DELETE FROM idem.run_log;
SELECT * FROM idem.overwrite_partition('h_days', '2024-07-07'::date, $$SELECT '2024-07-07'::date, 1 UNION ALL SELECT '2024-07-07', 2$$);
SELECT * FROM idem.overwrite_partition('h_days', '2024-07-07'::date, $$SELECT '2024-07-07'::date, 3$$);
SELECT * FROM idem.overwrite_partition('h_days', '2024-07-07'::date, $$SELECT '2024-07-07'::date, 4$$, mode => 'swap');
CREATE TABLE h_days_staging (LIKE h_days);
INSERT INTO h_days_staging VALUES ('2024-07-07', 5);
SELECT idem.swap_partition('h_days_0707', 'h_days_staging');
SELECT * FROM idem.replace_where('h_plain', $$day = '2024-07-07'$$, $$SELECT '2024-07-07'::date, 7$$);
SELECT * FROM idem.replace_where('h_plain', $$day = '2024-07-07'$$, $$SELECT '2024-07-07'::date, 7$$);
CREATE SCHEMA h_marts;
SELECT idem.publish('h_marts.daily', 'SELECT * FROM h_plain');
SELECT idem.publish('h_marts.daily', 'SELECT * FROM h_plain');
INSERT INTO h_plain VALUES ('2024-07-08', 8);
SELECT idem.publish('h_marts.daily', 'SELECT * FROM h_plain');
SELECT idem.rollback('h_marts.daily');
SELECT idem.run_once('h_load', 10, 'INSERT INTO h_plain SELECT ''2024-07-09'', g FROM generate_series(1, 4) g');
SELECT idem.run_once('h_load', 10, 'INSERT INTO h_plain SELECT ''2024-07-09'', g FROM generate_series(1, 4) g');
SELECT * FROM h_last;
-- What was recorded is what the functions returned, and nothing else was.
SELECT count(*) AS runs FROM idem.run_log;

-- Read-only transactions (and so hot standbys) record nothing: a no-op
-- rerun still runs there.
BEGIN READ ONLY;
SELECT * FROM idem.overwrite_partition('h_days', '2024-07-07'::date, $$SELECT '2024-07-07'::date, 5$$);
SELECT idem.publish('h_marts.daily', 'SELECT * FROM h_plain WHERE day < ''2024-07-08''');
COMMIT;
SELECT count(*) AS runs FROM idem.run_log;

-- Hostile names are recorded as they are; a hostile search_path changes
-- nothing in how the row is written.
CREATE TABLE "H Odd ""name""; x" (id int PRIMARY KEY, v text);
CREATE SCHEMA h_evil;
CREATE FUNCTION h_evil.clock_timestamp() RETURNS timestamptz LANGUAGE sql AS $$ SELECT '1999-01-01'::timestamptz $$;
CREATE FUNCTION h_evil.minus(timestamptz, interval) RETURNS timestamptz LANGUAGE sql AS $$ SELECT '1999-01-01'::timestamptz $$;
CREATE OPERATOR h_evil.- (LEFTARG = timestamptz, RIGHTARG = interval, FUNCTION = h_evil.minus);
SET search_path = h_evil, public, pg_catalog;
SELECT * FROM idem.merge_query('"H Odd ""name""; x"', $$SELECT 1 AS id, 'a' AS v$$);
RESET search_path;
SELECT target, unit, action, started_at > '2000-01-01' AS real_time FROM idem.run_history ORDER BY id DESC LIMIT 1;

-- Privileges: the log is closed; each role sees and purges its own runs.
CREATE ROLE h_etl;
CREATE ROLE h_other;
CREATE TABLE h_etl_t (id int PRIMARY KEY, v int);
ALTER TABLE h_etl_t OWNER TO h_etl;
CREATE TABLE h_other_t (id int PRIMARY KEY, v int);
ALTER TABLE h_other_t OWNER TO h_other;
SET ROLE h_etl;
SELECT * FROM idem.merge_query('h_etl_t', 'SELECT 1 AS id, 1 AS v');
SELECT function_name, target, role_name FROM idem.run_history;
SELECT show_error('SELECT * FROM idem.run_log');
SELECT show_error($$INSERT INTO idem.run_log (started_at, duration, function_name, target, action, counts,
  transaction_id, role_name, session_role, application_name, backend_pid)
  VALUES (now(), '0', 'merge', 'forged', 'merged', '{}', '1', 'h_other', 'x', 'x', 0)$$);
SELECT show_error($$UPDATE idem.run_history SET action = 'forged'$$);
RESET ROLE;
SET ROLE h_other;
SELECT * FROM idem.merge_query('h_other_t', 'SELECT 1 AS id, 1 AS v');
SELECT function_name, target, role_name FROM idem.run_history;
-- A leaky function cannot see through the view (security_barrier).
CREATE FUNCTION pg_temp.leak(text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN RAISE NOTICE 'saw %', $1; RETURN true; END $$;
SELECT target FROM idem.run_history WHERE pg_temp.leak(target);
-- purge_history deletes only the caller's runs.
SELECT idem.purge_history('0 seconds') AS purged;
SELECT show_error($$SELECT idem.purge_history(NULL)$$);
SELECT show_error($$SELECT idem.purge_history('-1 day')$$);
DROP FUNCTION pg_temp.leak(text);
RESET ROLE;
SELECT role_name, count(*) FROM idem.run_log WHERE role_name LIKE 'h\_%' GROUP BY 1 ORDER BY 1;
-- A member of a role sees that role's runs.
GRANT h_etl TO h_other;
SET ROLE h_other;
SELECT function_name, target, role_name FROM idem.run_history;
RESET ROLE;
-- Retention keeps what is younger than the age given.
SELECT idem.purge_history('1 day') AS purged_nothing_young;
SELECT idem.purge_history('0 seconds') > 0 AS superuser_purges_all;
SELECT count(*) AS left_over FROM idem.run_log;
DROP TABLE h_etl_t, h_other_t;
DROP ROLE h_etl;
DROP ROLE h_other;
