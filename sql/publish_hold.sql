-- A rollback that holds (issue 44, item 7). By default a rollback lasts
-- until the next publish of other content: the scheduled job, rerun on the
-- same data, publishes the rolled-back content again. With a hold
-- (rollback's hold => true, or idem.hold), publish builds nothing and says
-- so until idem.release.
CREATE SCHEMA ph;
CREATE TABLE ph.source (a int);
INSERT INTO ph.source VALUES (1);
SELECT idem.publish('ph.report', 'SELECT a FROM ph.source') AS v1;
UPDATE ph.source SET a = 2;  -- a bad load
SELECT idem.publish('ph.report', 'SELECT a FROM ph.source') AS v2;
-- The default: the rollback does not hold, and the job publishes again.
SELECT idem.rollback('ph.report') AS rolled_back_to;
SELECT idem.publish('ph.report', 'SELECT a FROM ph.source') AS republished;
SELECT * FROM ph.report;
-- With a hold: nothing is built, the NOTICE says so, readers keep the
-- rolled-back version, the run history records 'held'.
SELECT idem.rollback('ph.report', version => 1, hold => true) AS rolled_back_to;
SELECT current_version, held, held_by = current_user AS held_by_me, held_at IS NOT NULL AS since_known FROM idem.dataset_status('ph.report');
SELECT idem.publish('ph.report', 'SELECT a FROM ph.source') AS readers_see;
SELECT * FROM ph.report;
SELECT count(*) AS version_tables FROM pg_class WHERE relname LIKE 'report\_\_v%' AND relnamespace = 'ph'::regnamespace;
SELECT function_name, action, counts FROM idem.run_history WHERE target = 'ph.report' ORDER BY id;
-- Hold and release: whether each changed something.
SELECT idem.hold('ph.report') AS newly_held;
SELECT idem.release('ph.report') AS released;
SELECT idem.release('ph.report') AS released_again;
SELECT held FROM idem.dataset_status('ph.report');
UPDATE ph.source SET a = 3;  -- fixed upstream
SELECT idem.publish('ph.report', 'SELECT a FROM ph.source') AS fixed;
SELECT * FROM ph.report;
-- idem.hold directly (no rollback), then publish is held.
SELECT idem.hold('ph.report') AS newly_held;
SELECT idem.publish('ph.report', 'SELECT 4 AS a') AS readers_see;
SELECT idem.release('ph.report') AS released;
-- Errors: a dataset never published, NULL, another role without the
-- dataset grant; hold inside a rolled-back transaction leaves no hold.
SELECT show_error($$SELECT idem.hold('ph.never')$$);
SELECT show_error($$SELECT idem.hold(NULL)$$);
SELECT show_error($$SELECT idem.rollback('ph.report', hold => NULL)$$);
SELECT * FROM idem.dataset_status('ph.never');
BEGIN;
SELECT idem.hold('ph.report') AS newly_held;
ROLLBACK;
SELECT held FROM idem.dataset_status('ph.report');
CREATE ROLE ph_other;
GRANT USAGE ON SCHEMA ph TO ph_other;
SET ROLE ph_other;
SELECT show_error($$SELECT idem.hold('ph.report')$$);
SELECT show_error($$SELECT idem.release('ph.report')$$);
SELECT show_error($$SELECT * FROM idem.dataset_status('ph.report')$$);
RESET ROLE;
DROP SCHEMA ph CASCADE;
DROP ROLE ph_other;
