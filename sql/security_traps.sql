-- The security suite, generic part: an attacker plants trap operators and
-- functions under the names the extension's SQL uses, in a schema first in
-- its search_path and in public, and calls every public function. No trap
-- may run as another role (the extension owner), and none may run at all
-- unless the attacker's own SQL text calls it: the extension's SQL names
-- pg_catalog's operators and functions wherever it runs.
CREATE ROLE sec_trapper;
CREATE SCHEMA trap AUTHORIZATION sec_trapper;
GRANT CREATE ON SCHEMA public TO sec_trapper;
CREATE TABLE public.trap_fired (name text, ran_as name);
GRANT INSERT, SELECT, DELETE ON public.trap_fired TO PUBLIC;
SELECT idem.grant_usage('sec_trapper', 'trap_scope', 'keys');
SELECT idem.grant_usage('sec_trapper', 'trap_job', 'checkpoints');
SELECT idem.grant_usage('sec_trapper', 'trap.ds', 'dataset');

SET ROLE sec_trapper;
-- Comparison operators on the types the extension's SQL compares, and the
-- functions it calls, each in trap and in public: they log who ran them and
-- try to make the attacker a superuser.
DO $plant$
DECLARE
  -- Every trap: log the name and who ran it, escalate when that is a
  -- superuser, then return what the real one would (or NULL).
  body constant text := $b$BEGIN
    INSERT INTO public.trap_fired VALUES (%L, current_user);
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user) THEN
      EXECUTE 'ALTER ROLE sec_trapper SUPERUSER';
    END IF;
    RETURN %s;
  END$b$;
  t text; op text; sch text; f record; n int := 0;
BEGIN
  FOREACH sch IN ARRAY ARRAY['trap', 'public'] LOOP
    FOREACH t IN ARRAY ARRAY['text', 'name', 'integer', 'bigint', 'oid', 'uuid', 'boolean', 'numeric',
                             'timestamp with time zone', 'jsonb', 'regclass', 'regrole', 'xid8', 'char',
                             'interval', 'date'] LOOP
      FOREACH op IN ARRAY ARRAY['=', '<>', '<', '>', '<=', '>='] LOOP
        n := n + 1;
        EXECUTE format('CREATE FUNCTION %I.op_%s(a %s, b %s) RETURNS boolean LANGUAGE plpgsql AS %L',
                       sch, n, t, t, format(body, sch || '.' || op || '(' || t || ')', 'a OPERATOR(pg_catalog.' || op || ') b'));
        EXECUTE format('CREATE OPERATOR %I.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %I.op_%s)',
                       sch, op, t, t, sch, n);
      END LOOP;
    END LOOP;
    FOR f IN SELECT * FROM (VALUES
        ('md5', 'a text', 'text'), ('lower', 'a text', 'text'), ('upper', 'a text', 'text'),
        ('length', 'a text', 'integer'), ('hashtext', 'a text', 'integer'), ('quote_ident', 'a text', 'text'),
        ('parse_ident', 'a text', 'text[]'), ('to_regclass', 'a text', 'regclass'), ('btrim', 'a text', 'text'),
        ('jsonb_build_object', 'a text', 'jsonb'), ('array_length', 'a text[]', 'integer'),
        ('now', '', 'text'), ('clock_timestamp', '', 'text'), ('current_schema', '', 'text'),
        ('pg_backend_pid', '', 'text')) AS v(fname, args, rettype)
    LOOP
      EXECUTE format('CREATE FUNCTION %I.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L',
                     sch, f.fname, f.args, f.rettype, format(body, sch || '.' || f.fname, 'NULL'));
    END LOOP;
  END LOOP;
END
$plant$;

-- The attacker's tables, and the hostile search_path: traps before pg_catalog.
-- Caller SQL calls this: it must run as the caller, and only as the caller.
CREATE FUNCTION trap.caller_sql() RETURNS int LANGUAGE sql AS
  $$INSERT INTO public.trap_fired VALUES ('caller SQL', current_user) RETURNING 2$$;
CREATE TABLE trap.t (id int PRIMARY KEY, v int, gone boolean DEFAULT false);
CREATE TABLE trap.src (id int, v int, gone boolean);
INSERT INTO trap.src VALUES (1, 1, false), (2, 1, false);
CREATE TABLE trap.p (day date NOT NULL, n int) PARTITION BY RANGE (day);
CREATE TABLE trap.p_0707 PARTITION OF trap.p FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE trap.p_stage (LIKE trap.p);
INSERT INTO trap.p_stage VALUES ('2024-07-07', 9);
SET search_path = trap, public, pg_catalog;
-- The control: a trap fires for the attacker's own "=", as the attacker.
SELECT count(*) AS control FROM trap.src WHERE id = 1;
SELECT count(*) AS control_fired, min(ran_as) AS ran_as FROM public.trap_fired;
DELETE FROM public.trap_fired;

-- Every public function. The attacker's own SQL text calls trap.caller_sql()
-- and no operator or other function by name.
SELECT * FROM idem.merge('trap.t', 'trap.src', '{id}', version_column => 'v', delete_column => 'gone');
SELECT * FROM idem.merge_query('trap.t', 'SELECT 2 AS id, trap.caller_sql() AS v, true AS gone', '{id}',
                               version_column => 'v', delete_column => 'gone');
SELECT * FROM idem.merge('trap.t', 'trap.src', '{id}', delete_missing => true, dry_run => true);
SELECT idem.purge_tombstones('trap.t', '1 day');
SELECT idem.checksum('trap.t') IS NOT NULL AS checksum;
SELECT idem.checksum_query('SELECT trap.caller_sql()') IS NOT NULL AS checksum_query;
SELECT count(*) AS diff_rows FROM idem.diff('trap.t', 'trap.src');
BEGIN;
SELECT idem.claim('k1', 'trap_scope', lease => '1 hour') AS claimed;
SELECT idem.save_point('k1', 'half', 'trap_scope');
SELECT idem.complete('k1', '{"ok": true}', 'trap_scope');
COMMIT;
SELECT idem.result('k1', 'trap_scope');
SELECT state FROM idem.key_status('k1', 'trap_scope');
SELECT idem.claim_many(ARRAY['k2', 'k3'], 'trap_scope') ORDER BY 1;
SELECT idem.once('k4', 'SELECT trap.caller_sql() AS two', 'trap_scope');
SELECT idem.forget('k4', 'trap_scope');
SELECT idem.purge_keys('1 day', 'trap_scope');
SELECT idem.lock_job('trap_job');
SELECT idem.advance('trap_job', 5::bigint);
SELECT idem.watermark('trap_job'), idem.watermark('trap_job', NULL::bigint);
SELECT idem.rewind('trap_job', 3::bigint);
SELECT idem.run_once('trap_job', 4::bigint, 'SELECT trap.caller_sql()');
SELECT idem.mark_window('trap_job', 1::bigint, 2::bigint);
SELECT lo, hi FROM idem.windows('trap_job');
SELECT lo, hi FROM idem.gaps('trap_job', 0::bigint, 3::bigint, 1::bigint);
SELECT idem.publish('trap.ds', 'SELECT 1 AS n');
SELECT idem.publish('trap.ds', 'SELECT trap.caller_sql() AS n', audit => 'SELECT trap.caller_sql() IS NOT NULL');
SELECT version FROM idem.versions('trap.ds');
SELECT idem.pin('trap.ds', 1);
SELECT idem.rollback('trap.ds');
SELECT * FROM idem.replace_where('trap.t', 'trap.caller_sql() IS NOT NULL', 'SELECT 1, trap.caller_sql(), false');
SELECT * FROM idem.overwrite_partition('trap.p', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, trap.caller_sql()');
SELECT * FROM idem.overwrite_partition('trap.p', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, 3', mode => 'swap');
SELECT * FROM idem.overwrite_partition('trap.p', '2024-07-07', 'SELECT ''2024-07-07''::date, 3');
SELECT idem.swap_partition('trap.p_0707', 'trap.p_stage') IS NOT NULL AS swapped;
SELECT run, row_count FROM idem.assert_rerun_safe('SELECT trap.caller_sql()', ARRAY['trap.t'::regclass], allow_unchanged => true);
SELECT count(*) >= 0 AS history FROM idem.run_history;
SELECT idem.purge_history('1 day') >= 0 AS purged;
RESET search_path;
RESET ROLE;

-- No trap ran, for any role; the caller's SQL ran as the caller.
SELECT name, ran_as, count(*) > 0 AS ran FROM public.trap_fired GROUP BY 1, 2 ORDER BY 1, 2;
SELECT rolsuper AS sec_trapper_is_superuser FROM pg_roles WHERE rolname = 'sec_trapper';

DROP OWNED BY sec_trapper CASCADE;
DROP TABLE public.trap_fired;
DELETE FROM idem.keys WHERE scope = 'trap_scope';
DELETE FROM idem.checkpoints WHERE job = 'trap_job';
DELETE FROM idem.windows WHERE job = 'trap_job';
DELETE FROM idem.datasets WHERE schema_name = 'trap';
DELETE FROM idem.dataset_versions WHERE schema_name = 'trap';
SELECT idem.revoke_usage('sec_trapper', 'trap_scope', 'keys');
SELECT idem.revoke_usage('sec_trapper', 'trap_job', 'checkpoints');
SELECT idem.revoke_usage('sec_trapper', 'trap.ds', 'dataset');
DROP ROLE sec_trapper;
