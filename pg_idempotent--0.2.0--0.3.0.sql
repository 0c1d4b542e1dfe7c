-- pg_idempotent 0.2.0 -> 0.3.0
-- (A fresh CREATE EXTENSION runs 0.1.0, then 0.1.0--0.2.0, then this.)
\echo Use "ALTER EXTENSION pg_idempotent UPDATE TO '0.3.0'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- The run history: what each run of a bulk writing function did (merge,
-- merge_query, replace_where, overwrite_partition, swap_partition, publish,
-- rollback, run_once), one row per run, written in the caller's transaction
-- by the function itself. The setting idem.history (all | changes | off)
-- chooses which runs are recorded; read-only transactions record nothing.
--
-- Targets are text (schema.name at the time of the run), not regclass: the
-- history outlives the tables it names, and a dump restores it without OIDs.
-- Closed to PUBLIC: the functions insert as the extension owner, so nobody
-- can write a run that did not happen; idem.run_history shows each role its
-- own runs.
CREATE TABLE idem.run_log (
  id bigserial PRIMARY KEY,
  started_at timestamptz NOT NULL,
  duration interval NOT NULL,
  function_name text NOT NULL,
  target text NOT NULL,
  unit text,
  action text NOT NULL,
  counts jsonb NOT NULL,
  rows_written bigint,  -- NULL: not counted (swap_partition)
  transaction_id xid8 NOT NULL,
  role_name text NOT NULL,
  session_role text NOT NULL,
  application_name text NOT NULL,
  backend_pid int NOT NULL
);
-- Retention deletes by age; "what happened to this table" reads by target.
CREATE INDEX run_log_started_at ON idem.run_log (started_at);
CREATE INDEX run_log_target ON idem.run_log (target, started_at);
REVOKE ALL ON idem.run_log FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('idem.run_log', '');
SELECT pg_catalog.pg_extension_config_dump('idem.run_log_id_seq', '');
COMMENT ON TABLE idem.run_log IS
  'Every recorded run of a bulk writing function (read it through idem.run_history)';
COMMENT ON SEQUENCE idem.run_log_id_seq IS 'Numbers the rows of idem.run_log';

-- Each role sees the runs of the roles it is a member of (its own, and those
-- it could SET ROLE to); superusers see all. security_barrier: a caller's
-- leaky function in WHERE cannot see the rows the filter hides.
CREATE VIEW idem.run_history WITH (security_barrier) AS
SELECT l.id, l.started_at, l.started_at OPERATOR(pg_catalog.+) l.duration AS finished_at, l.duration,
       l.function_name, l.target, l.unit, l.action, l.counts, l.rows_written, l.transaction_id,
       l.role_name, l.session_role, l.application_name, l.backend_pid
  FROM idem.run_log l
 WHERE EXISTS (SELECT FROM pg_catalog.pg_roles r
                WHERE r.rolname OPERATOR(pg_catalog.=) l.role_name
                  AND pg_catalog.pg_has_role(r.oid, 'MEMBER'))
    OR (SELECT r.rolsuper FROM pg_catalog.pg_roles r
         WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER);
GRANT SELECT ON idem.run_history TO PUBLIC;
COMMENT ON VIEW idem.run_history IS
  'What each recorded run of merge, replace_where, overwrite_partition, swap_partition, publish, rollback and run_once did: the runs of your own roles';

-- Retention: deletes the recorded runs older than the given age that the
-- caller may see in idem.run_history (a superuser: all); returns how many.
-- A C function running as the caller, so it knows the caller's role after
-- SET ROLE, which it checks before deleting as the extension owner.
CREATE FUNCTION idem.purge_history(older_than interval)
  RETURNS bigint
  AS 'MODULE_PATHNAME', 'idem_purge_history'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.purge_history(interval) IS
  'Deletes the recorded runs (idem.run_history) of your roles older than the given age; returns how many';
