-- The boundary without sharp edges (docs/boundary.md, issue 22 part 3).

-- 1. An error raised inside one of the extension's own (hidden) statements
-- keeps every CONTEXT line but that statement's: a user trigger on a merge
-- target that raises is still named, with its PL/pgSQL line, and so is the
-- caller's own function.
CREATE TABLE edge_target (id int PRIMARY KEY, v text);
CREATE TABLE edge_source (id int PRIMARY KEY, v text);
INSERT INTO edge_source VALUES (1, 'one');
CREATE FUNCTION edge_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'edge_target refuses %', NEW.v USING ERRCODE = '22023';
END $$;
CREATE TRIGGER edge_refuse BEFORE INSERT ON edge_target FOR EACH ROW EXECUTE FUNCTION edge_refuse();
CREATE FUNCTION edge_caller() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM idem.merge('edge_target', 'edge_source');
END $$;
\set VERBOSITY default
SELECT * FROM idem.merge('edge_target', 'edge_source');
SELECT edge_caller();
-- The same, as GET STACKED DIAGNOSTICS sees it: the trigger's line, the
-- PERFORM's statement and the block's own line; not the merge statement.
DO $$
DECLARE ctx text;
BEGIN
  PERFORM idem.merge('edge_target', 'edge_source');
EXCEPTION WHEN invalid_parameter_value THEN
  GET STACKED DIAGNOSTICS ctx = PG_EXCEPTION_CONTEXT;
  RAISE NOTICE 'context: %', ctx;
END $$;
DROP TRIGGER edge_refuse ON edge_target;

-- 2. The scoped switches give everything back on every path, in the same
-- transaction (the probe counts the cases that did not; 0 is right). Run
-- by an ordinary role, so that the switch to the extension owner shows.
CREATE ROLE edge_runner;
GRANT EXECUTE ON FUNCTION idem._boundary_probe(text, text) TO edge_runner;
BEGIN;
SET LOCAL ROLE edge_runner;
SET LOCAL lock_timeout = '7s';
SET LOCAL DateStyle = 'SQL, DMY';
SELECT idem._boundary_probe('restore') AS cases_not_restored;
SELECT current_user, current_setting('lock_timeout') AS lock_timeout, current_setting('DateStyle') AS datestyle,
       current_setting('search_path') AS search_path;
COMMIT;
REVOKE EXECUTE ON FUNCTION idem._boundary_probe(text, text) FROM edge_runner;
DROP ROLE edge_runner;
-- A PostgreSQL error caught by the caller's own EXCEPTION block, raised
-- while the function ran with its lock_timeout.
BEGIN;
SET LOCAL lock_timeout = '7s';
SET LOCAL DateStyle = 'SQL, DMY';
DO $$
BEGIN
  PERFORM idem.replace_where('edge_target', 'true', 'SELECT 1 / 0, ''x''', lock_timeout => '1s');
EXCEPTION WHEN division_by_zero THEN
  RAISE NOTICE 'caught: lock_timeout %, DateStyle %, search_path %', current_setting('lock_timeout'),
    current_setting('DateStyle'), current_setting('search_path');
END $$;
COMMIT;

-- 3. An ERROR that longjmps straight past the entry guard (no pg_call in
-- between) leaves no entry behind: the next call is the outermost entry
-- again, in the same session, after a transaction abort and after a
-- subtransaction abort (a caller's EXCEPTION block).
SELECT idem._boundary_probe('entry') AS outermost;
SELECT idem._boundary_probe('longjmp');
SELECT idem._boundary_probe('entry') AS outermost_after_abort;
SELECT show_error($$SELECT idem._boundary_probe('longjmp')$$);
SELECT idem._boundary_probe('entry') AS outermost_after_subtransaction_abort;
BEGIN;
SAVEPOINT s;
SELECT idem._boundary_probe('longjmp');
ROLLBACK TO SAVEPOINT s;
SELECT idem._boundary_probe('entry') AS outermost_after_rollback_to;
-- and an error copied after that still reaches the client intact
SELECT show_error($$SELECT idem._boundary_probe('run', 'SELECT 1 / 0')$$);
COMMIT;

-- 4. describe_relation locks before it reads: a relation dropped meanwhile
-- is one error, 42P01 "relation with OID N does not exist" (the concurrent
-- case is test/specs/boundary_drop.spec).
CREATE TABLE edge_gone (id int);
SELECT 'edge_gone'::regclass::oid AS gone_oid \gset
DROP TABLE edge_gone;
SELECT regexp_replace(show_error($$SELECT idem.checksum($$ || :gone_oid || $$::regclass)$$), 'OID [0-9]+', 'OID N');

DROP FUNCTION edge_caller();
DROP FUNCTION edge_refuse();
DROP TABLE edge_target, edge_source;
