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
  t text; op text; sch text; f record; n int := 0;
BEGIN
  FOREACH sch IN ARRAY ARRAY['trap', 'public'] LOOP
    FOREACH t IN ARRAY ARRAY['text', 'name', 'integer', 'bigint', 'oid', 'uuid', 'boolean', 'numeric',
                             'timestamp with time zone', 'jsonb', 'regclass', 'regrole', 'xid8', 'char',
                             'interval', 'date'] LOOP
      FOREACH op IN ARRAY ARRAY['=', '<>', '<', '>', '<=', '>='] LOOP
        n := n + 1;
        EXECUTE format($f$CREATE FUNCTION %I.op_%s(a %s, b %s) RETURNS boolean LANGUAGE plpgsql AS $b$
          BEGIN
            INSERT INTO public.trap_fired VALUES (%L, current_user);
            IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user) THEN
              EXECUTE 'ALTER ROLE sec_trapper SUPERUSER';
            END IF;
            RETURN a OPERATOR(pg_catalog.%s) b;
          END $b$$f$, sch, n, t, t, sch || '.' || op || '(' || t || ')', op);
        EXECUTE format('CREATE OPERATOR %I.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %I.op_%s)',
                       sch, op, t, t, sch, n);
      END LOOP;
    END LOOP;
    FOR f IN SELECT * FROM (VALUES
        ('md5', 'text', 'text'), ('lower', 'text', 'text'), ('upper', 'text', 'text'),
        ('length', 'text', 'integer'), ('hashtext', 'text', 'integer'), ('quote_ident', 'text', 'text'),
        ('parse_ident', 'text', 'text[]'), ('to_regclass', 'text', 'regclass'), ('btrim', 'text', 'text'),
        ('jsonb_build_object', 'text', 'jsonb'), ('array_length', 'text[]', 'integer')) AS v(fname, argtype, rettype)
    LOOP
      EXECUTE format($f$CREATE FUNCTION %I.%I(a %s) RETURNS %s LANGUAGE plpgsql AS $b$
        BEGIN
          INSERT INTO public.trap_fired VALUES (%L, current_user);
          IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user) THEN
            EXECUTE 'ALTER ROLE sec_trapper SUPERUSER';
          END IF;
          RETURN NULL;
        END $b$$f$, sch, f.fname, f.argtype, f.rettype, sch || '.' || f.fname);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['now', 'clock_timestamp', 'current_schema', 'pg_backend_pid'] LOOP
      EXECUTE format($f$CREATE FUNCTION %I.%I() RETURNS text LANGUAGE plpgsql AS $b$
        BEGIN
          INSERT INTO public.trap_fired VALUES (%L, current_user);
          IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user) THEN
            EXECUTE 'ALTER ROLE sec_trapper SUPERUSER';
          END IF;
          RETURN NULL;
        END $b$$f$, sch, t, sch || '.' || t || '()');
    END LOOP;
  END LOOP;
END
$plant$;

-- The attacker's tables, and the hostile search_path: traps before pg_catalog.
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

-- Every public function, with SQL text of the attacker's that uses no
-- operator or function by name.
SELECT * FROM idem.merge('trap.t', 'trap.src', '{id}', version_column => 'v', delete_column => 'gone');
SELECT * FROM idem.merge_query('trap.t', 'SELECT 2 AS id, 2 AS v, true AS gone', '{id}',
                               version_column => 'v', delete_column => 'gone');
SELECT * FROM idem.merge('trap.t', 'trap.src', '{id}', delete_missing => true, dry_run => true);
SELECT idem.purge_tombstones('trap.t', '1 day');
SELECT idem.checksum('trap.t') IS NOT NULL AS checksum;
SELECT idem.checksum_query('SELECT 1') IS NOT NULL AS checksum_query;
SELECT count(*) AS diff_rows FROM idem.diff('trap.t', 'trap.src');
BEGIN;
SELECT idem.claim('k1', 'trap_scope', lease => '1 hour') AS claimed;
SELECT idem.save_point('k1', 'half', 'trap_scope');
SELECT idem.complete('k1', '{"ok": true}', 'trap_scope');
COMMIT;
SELECT idem.result('k1', 'trap_scope');
SELECT state FROM idem.key_status('k1', 'trap_scope');
SELECT idem.claim_many(ARRAY['k2', 'k3'], 'trap_scope') ORDER BY 1;
SELECT idem.once('k4', 'SELECT 1 AS one', 'trap_scope');
SELECT idem.forget('k4', 'trap_scope');
SELECT idem.purge_keys('1 day', 'trap_scope');
SELECT idem.lock_job('trap_job');
SELECT idem.advance('trap_job', 5::bigint);
SELECT idem.watermark('trap_job'), idem.watermark('trap_job', NULL::bigint);
SELECT idem.rewind('trap_job', 3::bigint);
SELECT idem.run_once('trap_job', 4::bigint, 'SELECT 1');
SELECT idem.mark_window('trap_job', 1::bigint, 2::bigint);
SELECT lo, hi FROM idem.windows('trap_job');
SELECT lo, hi FROM idem.gaps('trap_job', 0::bigint, 3::bigint, 1::bigint);
SELECT idem.publish('trap.ds', 'SELECT 1 AS n');
SELECT idem.publish('trap.ds', 'SELECT 2 AS n');
SELECT version FROM idem.versions('trap.ds');
SELECT idem.pin('trap.ds', 1);
SELECT idem.rollback('trap.ds');
SELECT * FROM idem.replace_where('trap.t', 'true', 'SELECT 1, 1, false');
SELECT * FROM idem.overwrite_partition('trap.p', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, 1');
SELECT * FROM idem.overwrite_partition('trap.p', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, 2', mode => 'swap');
SELECT * FROM idem.overwrite_partition('trap.p', '2024-07-07', 'SELECT ''2024-07-07''::date, 2');
SELECT idem.swap_partition('trap.p_0707', 'trap.p_stage') IS NOT NULL AS swapped;
SELECT run, row_count FROM idem.assert_rerun_safe('SELECT 1', ARRAY['trap.t'::regclass]);
SELECT count(*) >= 0 AS history FROM idem.run_history;
SELECT idem.purge_history('1 day') >= 0 AS purged;
RESET search_path;
RESET ROLE;

-- No trap ran, for any role.
SELECT name, ran_as, count(*) FROM public.trap_fired GROUP BY 1, 2 ORDER BY 1, 2;
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
