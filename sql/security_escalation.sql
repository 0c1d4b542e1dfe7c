-- The security suite (make test: suite "security"; SECURITY.md). Each block
-- is an attack found on 0.6.0, run as the attacker would, with ordinary roles
-- holding the grants the docs describe; each fails on 0.6.0.
-- A trap that an attacker plants: it records who ran it and, when that is a
-- superuser, makes the attacker one.
CREATE TABLE public.trap_log (fn text, ran_as name);
GRANT INSERT, SELECT ON public.trap_log TO PUBLIC;

-- 1. idem.versions ran a JOIN ... USING as the extension owner, which picked
-- the caller's "=" from the caller's search_path.
CREATE ROLE sec_etl;
CREATE SCHEMA sec_etl AUTHORIZATION sec_etl;
SELECT idem.grant_usage('sec_etl', 'sec_etl.report', 'dataset');
SET ROLE sec_etl;
SELECT idem.publish('sec_etl.report', 'SELECT 1 AS x');
CREATE FUNCTION sec_etl.eq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.trap_log VALUES ('sec_etl.=', current_user);
  IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user)
  THEN EXECUTE 'ALTER ROLE sec_etl SUPERUSER'; END IF;
  RETURN a OPERATOR(pg_catalog.=) b;
END $$;
CREATE OPERATOR sec_etl.= (LEFTARG = text, RIGHTARG = text, FUNCTION = sec_etl.eq);
SET search_path = sec_etl, pg_catalog;
SELECT count(*) AS versions FROM idem.versions('sec_etl.report');
RESET search_path;
RESET ROLE;
SELECT rolsuper AS sec_etl_is_superuser FROM pg_roles WHERE rolname = 'sec_etl';
SELECT count(*) AS traps_run_as_another_role FROM trap_log WHERE ran_as <> 'sec_etl';

-- 2. idem.windows parsed stored bounds with the type the job's first writer
-- chose (a domain whose CHECK calls the writer's function), in the reader's
-- session. Now the job keeps the base type.
CREATE ROLE sec_runner;
CREATE SCHEMA sec_runner AUTHORIZATION sec_runner;
SELECT idem.grant_usage('sec_runner', 'sec_nightly', 'checkpoints');
SET ROLE sec_runner;
CREATE FUNCTION sec_runner.chk(v bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.trap_log VALUES ('sec_runner.chk', current_user);
  IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user)
  THEN EXECUTE 'ALTER ROLE sec_runner SUPERUSER'; END IF;
  RETURN true;
END $$;
CREATE DOMAIN sec_runner.wm AS bigint CHECK (sec_runner.chk(VALUE));
SELECT idem.mark_window('sec_nightly', 1::sec_runner.wm, 2::sec_runner.wm);
RESET ROLE;
-- A superuser inspects the job.
SELECT lo, hi FROM idem.windows('sec_nightly');
SELECT value_type FROM idem.checkpoints WHERE job = 'sec_nightly';
SELECT rolsuper AS sec_runner_is_superuser FROM pg_roles WHERE rolname = 'sec_runner';
SELECT fn, ran_as FROM trap_log WHERE ran_as <> 'sec_runner' AND fn = 'sec_runner.chk';
-- A type of the attacker's own (not a domain over a built-in) is refused.
SET ROLE sec_runner;
CREATE TYPE sec_runner.level AS ENUM ('low', 'high');
SELECT show_error($$SELECT idem.mark_window('sec_enum', 'low'::sec_runner.level, 'high'::sec_runner.level)$$);
SELECT show_error($$SELECT idem.advance('sec_enum', 'low'::sec_runner.level)$$);
RESET ROLE;

-- Weak spot 1: tombstones of another role's table. sec_etl has a usage
-- grant but no privilege on alice's table: it can neither plant, read nor
-- purge its tombstones.
CREATE ROLE sec_alice;
CREATE TABLE sec_orders (id int PRIMARY KEY, v int, gone boolean DEFAULT false);
ALTER TABLE sec_orders OWNER TO sec_alice;
SET ROLE sec_alice;
SELECT * FROM idem.merge_query('sec_orders', 'SELECT 1 AS id, 5 AS v, true AS gone',
                               version_column => 'v', delete_column => 'gone');
RESET ROLE;
SET ROLE sec_etl;
SELECT show_error($$SELECT idem._tombstones_put('sec_orders', ARRAY[idem._row_digest(ROW(7))], ARRAY['{}'::jsonb], ARRAY['999'])$$);
SELECT show_error($$SELECT count(*) FROM idem._tombstones_of('sec_orders'::regclass)$$);
SELECT show_error($$SELECT idem.purge_tombstones('sec_orders', '0 seconds')$$);
RESET ROLE;
SELECT count(*) AS alices_tombstones, min(version) AS version FROM idem.tombstones WHERE target = 'sec_orders'::regclass;
-- Alice's versioned merge of key 7 is not dropped as stale.
SET ROLE sec_alice;
SELECT * FROM idem.merge_query('sec_orders', 'SELECT 7 AS id, 1 AS v, false AS gone',
                               version_column => 'v', delete_column => 'gone');
RESET ROLE;

-- Weak spot 2: the locks that serialize overwrites are not advisory locks
-- anyone can take (the isolation spec security_unit_lock shows a holder of
-- the old keys no longer blocks anything). Here: replace_where's lock is an
-- object lock of the extension's, taken after the privilege check.
CREATE TABLE sec_flat (day date, n int);
BEGIN;
SELECT * FROM idem.replace_where('sec_flat', 'day = ''2024-07-07''', 'SELECT ''2024-07-07''::date, 1');
SELECT l.locktype, l.mode, l.objid = 'sec_flat'::regclass::oid AS on_the_table, l.objsubid
  FROM pg_locks l
 WHERE l.classid = (SELECT oid FROM pg_extension WHERE extname = 'pg_idempotent')
   AND l.pid = pg_backend_pid();
SELECT count(*) AS advisory_locks FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
ROLLBACK;
-- Privileges first: a caller who may not write the table gets 42501 and
-- holds no lock on its unit.
CREATE ROLE sec_reader;
GRANT SELECT ON sec_flat TO sec_reader;
BEGIN;
SET LOCAL ROLE sec_reader;
SELECT show_error($$SELECT * FROM idem.replace_where('sec_flat', 'true', 'SELECT ''2024-07-07''::date, 1')$$);
SELECT count(*) AS unit_locks_held FROM pg_locks l
 WHERE l.classid = (SELECT oid FROM pg_extension WHERE extname = 'pg_idempotent') AND l.pid = pg_backend_pid();
ROLLBACK;

-- Weak spot 3: a view that publish did not make is not published into: a
-- role with CREATE on a shared schema plants shared.payroll; a superuser's
-- publish would have made that role the owner of the version table.
CREATE SCHEMA sec_shared;
GRANT CREATE, USAGE ON SCHEMA sec_shared TO sec_etl;
CREATE TABLE sec_salaries (who text, amount int);
INSERT INTO sec_salaries VALUES ('ceo', 1000);
SET ROLE sec_etl;
CREATE VIEW sec_shared.payroll AS SELECT;
RESET ROLE;
SELECT show_error($$SELECT idem.publish('sec_shared.payroll', 'SELECT * FROM sec_salaries')$$);
SELECT count(*) AS version_tables FROM pg_class WHERE relname LIKE 'payroll__v%';
-- Only the view's owner may adopt it; the superuser may then publish, and
-- the version belongs to the adopted view's owner, as the DBA chose.
SELECT idem.grant_usage('sec_reader', 'sec_shared.payroll', 'dataset');
SET ROLE sec_reader;
SELECT show_error($$SELECT idem.adopt('sec_shared.payroll')$$);
RESET ROLE;
SELECT idem.grant_usage('sec_etl', 'sec_shared.payroll', 'dataset');
SET ROLE sec_etl;
SELECT idem.adopt('sec_shared.payroll');
RESET ROLE;
SELECT idem.publish('sec_shared.payroll', 'SELECT 1 AS n');
SELECT pg_get_userbyid(relowner) AS version_owner FROM pg_class WHERE oid = 'sec_shared.payroll__v1'::regclass;
-- A dataset publish made keeps its registered owner: a view dropped and made
-- again by another role is refused again.
SELECT idem.publish('sec_shared.ledger', 'SELECT 1 AS n');
SET ROLE sec_etl;
SELECT show_error($$DROP VIEW sec_shared.ledger$$);
RESET ROLE;
DROP VIEW sec_shared.ledger;
SET ROLE sec_etl;
CREATE VIEW sec_shared.ledger AS SELECT 1 AS n;
RESET ROLE;
SELECT show_error($$SELECT idem.publish('sec_shared.ledger', 'SELECT 2 AS n')$$);
SELECT show_error($$SELECT idem.rollback('sec_shared.ledger')$$);

-- Weak spot 4: the every-scope grant is an administrator's, with a WARNING.
SELECT idem.grant_usage('sec_reader');
SELECT idem.revoke_usage('sec_reader');

-- Weak spot 5: grants name their kind; a dataset grant is no key grant, and
-- datasets are named by their quoted name ("a.x".y is not a."x.y").
SET ROLE sec_etl;
SELECT show_error($$SELECT idem.claim('k1', 'sec_etl.report')$$);
SELECT show_error($$SELECT idem.advance('sec_etl.report', 1)$$);
RESET ROLE;
SELECT idem.grant_usage('sec_etl', 'sec_etl."x.y"', 'dataset');
SELECT role::text, kind, scope FROM idem.usage_grants WHERE role = 'sec_etl'::regrole ORDER BY kind, scope;
SET ROLE sec_etl;
SELECT show_error($$SELECT idem.publish('"sec_etl.x".y', 'SELECT 1 AS n')$$);
RESET ROLE;
SELECT show_error($$SELECT idem.grant_usage('sec_etl', 'a.b.c', 'dataset')$$);
SELECT show_error($$SELECT idem.grant_usage('sec_etl', 'x', 'everything')$$);

-- Weak spot 6: the run history knows roles by OID. A role created under a
-- dropped role's name does not see that role's runs.
CREATE ROLE sec_gone;
GRANT ALL ON sec_flat TO sec_gone;
SET ROLE sec_gone;
SELECT * FROM idem.replace_where('sec_flat', 'day = ''2024-07-07''', 'SELECT ''2024-07-07''::date, 2');
SELECT count(*) AS own_runs FROM idem.run_history WHERE target = 'public.sec_flat';
RESET ROLE;
REVOKE ALL ON sec_flat FROM sec_gone;
DROP ROLE sec_gone;
CREATE ROLE sec_gone;
SET ROLE sec_gone;
SELECT count(*) AS runs_of_the_old_role FROM idem.run_history WHERE target = 'public.sec_flat';
SELECT idem.purge_history('0 seconds') AS purged;
RESET ROLE;
SELECT count(*) AS runs_kept FROM idem.run_log WHERE target = 'public.sec_flat';

-- Weak spot 7: what the run log keeps of a caller's text is capped.
SELECT * FROM idem.replace_where('sec_flat', 'day = ''2024-07-07'' OR ' || repeat('n = 1 OR ', 2000) || 'false',
                                 'SELECT ''2024-07-07''::date, 3');
SELECT length(unit) AS stored_length, right(unit, 15) AS marker FROM idem.run_log
 WHERE target = 'public.sec_flat' ORDER BY id DESC LIMIT 1;

-- Weak spot 8: diff checks SELECT before it compares anything.
CREATE TABLE sec_secret (id int, salary int);
SET ROLE sec_reader;
SELECT show_error($$SELECT * FROM idem.diff('sec_secret', 'sec_flat')$$);
RESET ROLE;

-- Found in review (0.7.0): merge checks the caller's privileges before it
-- takes the target's merge lock, so a role that may not write the table
-- cannot hold the lock (and make the owner's merges wait).
CREATE TABLE sec_keyed (id int PRIMARY KEY, n int);
GRANT SELECT ON sec_keyed TO sec_reader;
SET ROLE sec_reader;
BEGIN;
SELECT show_error($$SELECT * FROM idem.merge_query('sec_keyed', 'SELECT 1 AS id, 1 AS n')$$);
SELECT count(*) AS unit_locks_held FROM pg_locks l
 WHERE l.classid = (SELECT oid FROM pg_extension WHERE extname = 'pg_idempotent') AND l.pid = pg_backend_pid();
ROLLBACK;
RESET ROLE;
-- Tombstones cover the whole table: with row-level security, a role allowed
-- some rows may neither plant, read nor purge them (only the owner may).
CREATE TABLE sec_tenants (tenant text, id int PRIMARY KEY, ver int, gone boolean DEFAULT false);
ALTER TABLE sec_tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_tenant ON sec_tenants TO sec_reader USING (tenant = 'a');
GRANT SELECT, INSERT, UPDATE, DELETE ON sec_tenants TO sec_reader;
SET ROLE sec_reader;
SELECT show_error($$SELECT idem._tombstones_put('sec_tenants', ARRAY[idem._row_digest(ROW(42))], ARRAY['[42]'::jsonb], ARRAY['999'])$$);
SELECT show_error($$SELECT count(*) FROM idem._tombstones_of('sec_tenants'::regclass)$$);
SELECT show_error($$SELECT idem.purge_tombstones('sec_tenants', '0 seconds')$$);
RESET ROLE;
-- Column privileges do not reach them either.
REVOKE ALL ON sec_tenants FROM sec_reader;
ALTER TABLE sec_tenants DISABLE ROW LEVEL SECURITY;
GRANT SELECT (id) ON sec_tenants TO sec_reader;
SET ROLE sec_reader;
SELECT show_error($$SELECT count(*) FROM idem._tombstones_of('sec_tenants'::regclass)$$);
RESET ROLE;
-- An anonymous record cannot be a job's type: it could never be read back.
SELECT show_error($$SELECT idem.mark_window('sec_record', ROW(1, 'x'), ROW(2, 'y'))$$);
DROP TABLE sec_tenants, sec_keyed;

-- Clean up.
SELECT idem.revoke_usage('sec_etl', 'sec_etl.report', 'dataset');
SELECT idem.revoke_usage('sec_etl', 'sec_shared.payroll', 'dataset');
SELECT idem.revoke_usage('sec_etl', 'sec_etl."x.y"', 'dataset');
SELECT idem.revoke_usage('sec_runner', 'sec_nightly', 'checkpoints');
SELECT idem.revoke_usage('sec_reader', 'sec_shared.payroll', 'dataset');
DROP SCHEMA sec_shared CASCADE;
DROP SCHEMA sec_etl CASCADE;
DROP SCHEMA sec_runner CASCADE;
DROP TABLE sec_orders, sec_flat, sec_salaries, sec_secret, trap_log;
DELETE FROM idem.datasets WHERE schema_name IN ('sec_etl', 'sec_shared');
DELETE FROM idem.dataset_versions WHERE schema_name IN ('sec_etl', 'sec_shared');
DELETE FROM idem.checkpoints WHERE job LIKE 'sec_%';
DELETE FROM idem.windows WHERE job LIKE 'sec_%';
DROP ROLE sec_etl, sec_runner, sec_alice, sec_reader, sec_gone;
