-- pg_idempotent 0.1.0: the foundation and the first capability, checksums.
-- Every object is created in schema idem (control file: schema = idem, not
-- relocatable) and referred to schema-qualified, so the script behaves the
-- same under any search_path (the CVE-2018-1058 class).

\echo Use "CREATE EXTENSION pg_idempotent" to load this file. \quit

-- CREATE EXTENSION reuses an existing schema idem. One owned by a role other
-- than a superuser could hold objects planted to be called by the SQL this
-- extension writes: refuse it.
DO $guard$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_namespace n
               JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner
              WHERE n.nspname OPERATOR(pg_catalog.=) 'idem' AND NOT r.rolsuper) THEN
    RAISE EXCEPTION 'schema "idem" already exists and is owned by a role that is not a superuser'
      USING ERRCODE = '42P06',
            HINT = 'Drop that schema (after checking what is in it) and run CREATE EXTENSION pg_idempotent again.';
  END IF;
END
$guard$;

COMMENT ON SCHEMA idem IS
  'pg_idempotent: functions that make data pipelines safe to run twice';

-- No one but the owner creates objects here: SQL the extension writes refers
-- to idem.* and must find only what the extension put there.
REVOKE CREATE ON SCHEMA idem FROM PUBLIC;
GRANT USAGE ON SCHEMA idem TO PUBLIC;

-- The one definition of "the same row" (docs/row-image.md), per row.
CREATE FUNCTION idem._row_digest(row_value record) RETURNS uuid
  AS 'MODULE_PATHNAME', 'idem__row_digest'
  LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION idem._row_digest(record) IS
  'Internal: the XXH3-128 hash of a row''s v1 image (docs/row-image.md); equal exactly when the rows are equal under *=';

CREATE FUNCTION idem.checksum(rel regclass, exclude_columns text[] DEFAULT '{}')
  RETURNS text
  AS 'MODULE_PATHNAME', 'idem_checksum'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.checksum(regclass, text[]) IS
  'Order-independent, duplicate-sensitive v1 checksum of the rows of a table, partitioned table or view, leaving out exclude_columns';

CREATE FUNCTION idem.checksum_query(query text)
  RETURNS text
  AS 'MODULE_PATHNAME', 'idem_checksum_query'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.checksum_query(text) IS
  'The v1 checksum of the rows a query returns (one statement, run as the caller under the caller''s search_path)';

CREATE FUNCTION idem.diff(a regclass, b regclass,
                          exclude_columns text[] DEFAULT '{}',
                          max_rows int DEFAULT 100)
  RETURNS TABLE(side text, copies bigint, row_data jsonb)
  AS 'MODULE_PATHNAME', 'idem_diff'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 100;
COMMENT ON FUNCTION idem.diff(regclass, regclass, text[], int) IS
  'Rows present more often in one relation than the other (side a or b, how many extra copies), compared by stored image';

CREATE FUNCTION idem._boundary_probe(action text, sql text DEFAULT NULL)
  RETURNS bigint
  AS 'MODULE_PATHNAME', 'idem__boundary_probe'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem._boundary_probe(text, text) IS
  'Internal diagnostic for the test suite: drives the C++/PostgreSQL error boundary (superuser only)';
REVOKE ALL ON FUNCTION idem._boundary_probe(text, text) FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- Internal helpers shared by the families.

-- Raises an error with the given SQLSTATE from inside a statement the
-- extension builds (a CASE calls it only when a check fails).
CREATE FUNCTION idem._raise(code text, message text, detail text, hint text)
  RETURNS boolean LANGUAGE plpgsql VOLATILE PARALLEL SAFE
  SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message,
                        DETAIL = coalesce(detail, ''), HINT = coalesce(hint, '');
END
$$;
COMMENT ON FUNCTION idem._raise(text, text, text, text) IS
  'Internal: raises an error with a given SQLSTATE from inside a statement built by the extension';

-- ---------------------------------------------------------------------------
-- Family 2: merge on the business key.

-- Tombstones: a versioned delete leaves (key, version) here so that a late,
-- older row cannot bring the key back. Closed to PUBLIC; touched only by the
-- SECURITY DEFINER functions below. The target is a regclass (dumped by
-- name, so it survives pg_dump/pg_restore); the key is kept as the digest of
-- its v1 image, with a readable copy. Versions are text in a canonical form
-- (the functions fix DateStyle, TimeZone, IntervalStyle, extra_float_digits).
CREATE TABLE idem.tombstones (
  target regclass NOT NULL,
  key_digest uuid NOT NULL,
  key_data jsonb,
  version text NOT NULL,
  deleted_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
  PRIMARY KEY (target, key_digest)
);
CREATE INDEX tombstones_deleted_at ON idem.tombstones (target, deleted_at);
REVOKE ALL ON idem.tombstones FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('idem.tombstones', '');
COMMENT ON TABLE idem.tombstones IS
  'Versioned deletes of idem.merge: a key deleted at a version stays deleted for older rows';

-- Values in canonical text (ISO dates, UTC timestamps...) and back, run as
-- the caller: a type's input and output functions are never run with the
-- extension owner's rights.
CREATE FUNCTION idem._canonical_text(value anyelement) RETURNS text
  AS 'MODULE_PATHNAME', 'idem__canonical_text'
  LANGUAGE C STABLE STRICT PARALLEL SAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem._canonical_text(anyelement) IS
  'Internal: a value as text that does not depend on session settings (docs/checkpoints.md)';
CREATE FUNCTION idem._from_canonical(value text, as_type anyelement) RETURNS anyelement
  AS 'MODULE_PATHNAME', 'idem__from_canonical'
  LANGUAGE C STABLE PARALLEL SAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem._from_canonical(text, anyelement) IS
  'Internal: reads canonical text back as a value of as_type''s type';

-- The tombstone functions move text only: no type's code runs inside them.
CREATE FUNCTION idem._tombstones(target regclass)
  RETURNS TABLE(key_digest uuid, version text)
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
  SELECT t.key_digest, t.version FROM idem.tombstones t WHERE t.target OPERATOR(pg_catalog.=) $1
$$;
COMMENT ON FUNCTION idem._tombstones(regclass) IS
  'Internal: the tombstones of a merge target (versions in canonical text)';

CREATE FUNCTION idem._tombstones_put(target regclass, key_digests uuid[], key_data jsonb[], versions text[])
  RETURNS bigint
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  n bigint;
BEGIN
  IF _tombstones_put.key_digests IS NULL THEN
    RETURN 0;
  END IF;
  -- The merge statement only asks for tombstones at least as new as what it
  -- replaces (it compared the versions, as the caller).
  INSERT INTO idem.tombstones AS t (target, key_digest, key_data, version)
  SELECT _tombstones_put.target, u.d, u.k, u.v
    FROM ROWS FROM (pg_catalog.unnest(_tombstones_put.key_digests), pg_catalog.unnest(_tombstones_put.key_data),
                    pg_catalog.unnest(_tombstones_put.versions)) AS u(d, k, v)
  ON CONFLICT (target, key_digest) DO UPDATE
     SET version = EXCLUDED.version, key_data = EXCLUDED.key_data, deleted_at = pg_catalog.now();
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END
$$;
COMMENT ON FUNCTION idem._tombstones_put(regclass, uuid[], jsonb[], text[]) IS
  'Internal: records versioned deletes of a merge target';

CREATE FUNCTION idem.purge_tombstones(target regclass, older_than interval)
  RETURNS bigint
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
DECLARE n bigint;
BEGIN
  IF target IS NULL OR older_than IS NULL THEN
    RAISE EXCEPTION 'target and older_than must not be NULL' USING ERRCODE = '22004';
  END IF;
  DELETE FROM idem.tombstones t
   WHERE t.target OPERATOR(pg_catalog.=) purge_tombstones.target
     AND t.deleted_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) older_than);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END
$$;
COMMENT ON FUNCTION idem.purge_tombstones(regclass, interval) IS
  'Deletes the tombstones of a merge target older than the given age; returns how many';

-- Tombstones are state: granted with idem.grant_usage, not to PUBLIC.
REVOKE ALL ON FUNCTION idem._tombstones(regclass) FROM PUBLIC;
REVOKE ALL ON FUNCTION idem._tombstones_put(regclass, uuid[], jsonb[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION idem.purge_tombstones(regclass, interval) FROM PUBLIC;

CREATE FUNCTION idem.merge(target regclass, source regclass,
                           key text[] DEFAULT NULL,
                           version_column text DEFAULT NULL,
                           delete_column text DEFAULT NULL,
                           delete_missing boolean DEFAULT false,
                           delete_scope text DEFAULT NULL,
                           columns text[] DEFAULT NULL,
                           allow_empty boolean DEFAULT false,
                           dry_run boolean DEFAULT false)
  RETURNS TABLE(inserted bigint, updated bigint, deleted bigint, unchanged bigint, stale bigint)
  AS 'MODULE_PATHNAME', 'idem_merge'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.merge(regclass, regclass, text[], text, text, boolean, text, text[], boolean, boolean) IS
  'Merges a source table or view into target on the business key: inserts new keys, updates changed rows, never touches unchanged ones; versions, deletes and tombstones';

CREATE FUNCTION idem.merge_query(target regclass, query text,
                                 key text[] DEFAULT NULL,
                                 version_column text DEFAULT NULL,
                                 delete_column text DEFAULT NULL,
                                 delete_missing boolean DEFAULT false,
                                 delete_scope text DEFAULT NULL,
                                 columns text[] DEFAULT NULL,
                                 allow_empty boolean DEFAULT false,
                                 dry_run boolean DEFAULT false)
  RETURNS TABLE(inserted bigint, updated bigint, deleted bigint, unchanged bigint, stale bigint)
  AS 'MODULE_PATHNAME', 'idem_merge_query'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.merge_query(regclass, text, text[], text, text, boolean, text, text[], boolean, boolean) IS
  'idem.merge with the source given as a query (run once, as the caller, under the caller''s search_path)';

-- ---------------------------------------------------------------------------
-- Who may use idem's state: a DBA's grants, per scope or for every scope
-- (scope NULL). Checked by the state functions against the calling role and
-- every role whose privileges it has, so "GRANT idem_user TO etl" works after
-- a one-time SELECT idem.grant_usage('idem_user').
CREATE TABLE idem.usage_grants (
  role regrole NOT NULL,
  scope text,
  granted_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE UNIQUE INDEX usage_grants_role_scope ON idem.usage_grants (role, (COALESCE(scope, '')));
REVOKE ALL ON idem.usage_grants FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('idem.usage_grants', '');
COMMENT ON TABLE idem.usage_grants IS
  'Roles allowed to use idem''s keys (per scope, or every scope when scope is NULL) and tombstones';

CREATE FUNCTION idem.grant_usage(role regrole, scope text DEFAULT NULL) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
  IF role IS NULL THEN
    RAISE EXCEPTION 'role must not be NULL' USING ERRCODE = '22004';
  END IF;
  IF scope = '' THEN
    RAISE EXCEPTION 'scope must not be empty' USING ERRCODE = '22023', HINT = 'Pass NULL for every scope.';
  END IF;
  INSERT INTO idem.usage_grants (role, scope) VALUES (grant_usage.role, grant_usage.scope)
    ON CONFLICT (role, (COALESCE(scope, ''))) DO NOTHING;
  EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION idem._tombstones(regclass), '
    'idem._tombstones_put(regclass, uuid[], jsonb[], text[]), '
    'idem.purge_tombstones(regclass, interval) TO %s', role);
END
$$;
REVOKE ALL ON FUNCTION idem.grant_usage(regrole, text) FROM PUBLIC;
COMMENT ON FUNCTION idem.grant_usage(regrole, text) IS
  'Lets a role use idem''s keys (in one scope, or every scope when scope is NULL) and tombstones: the one grant a pipeline role needs';

CREATE FUNCTION idem.revoke_usage(role regrole, scope text DEFAULT NULL) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF role IS NULL THEN
    RAISE EXCEPTION 'role must not be NULL' USING ERRCODE = '22004';
  END IF;
  DELETE FROM idem.usage_grants g
   WHERE g.role OPERATOR(pg_catalog.=) revoke_usage.role
     AND COALESCE(g.scope, '') OPERATOR(pg_catalog.=) COALESCE(revoke_usage.scope, '');
  IF NOT EXISTS (SELECT FROM idem.usage_grants g WHERE g.role OPERATOR(pg_catalog.=) revoke_usage.role) THEN
    EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION idem._tombstones(regclass), '
      'idem._tombstones_put(regclass, uuid[], jsonb[], text[]), '
      'idem.purge_tombstones(regclass, interval) FROM %s', role);
  END IF;
END
$$;
REVOKE ALL ON FUNCTION idem.revoke_usage(regrole, text) FROM PUBLIC;
COMMENT ON FUNCTION idem.revoke_usage(regrole, text) IS
  'Takes back what idem.grant_usage gave a role (for one scope, or the every-scope grant when scope is NULL)';

-- ---------------------------------------------------------------------------
-- Family 3: idempotency keys. "I already did this" is a row, claimed in the
-- caller's transaction. The key itself can be of any length: rows are found
-- by (scope, md5(key)), so keys beyond the btree size limit work.
CREATE TABLE idem.keys (
  scope text NOT NULL,
  key_hash uuid NOT NULL,
  key text NOT NULL,
  fingerprint text,
  state text NOT NULL,  -- 'in_progress' or 'done', written only by idem's functions
  result jsonb,
  recovery_point text,
  lease interval,
  claimed_at timestamptz NOT NULL,
  completed_at timestamptz,
  lease_until timestamptz,
  claimed_by xid8 NOT NULL,
  PRIMARY KEY (scope, key_hash)
);
-- purge_keys deletes by age: a range scan, not a scan of every key.
CREATE INDEX keys_age ON idem.keys ((COALESCE(completed_at, claimed_at)));
REVOKE ALL ON idem.keys FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('idem.keys', '');
COMMENT ON TABLE idem.keys IS
  'Idempotency keys: one row per (scope, key) claimed by idem.claim, claim_many or once';

CREATE FUNCTION idem.claim(key text, scope text DEFAULT 'default', fingerprint text DEFAULT NULL,
                           wait boolean DEFAULT true, lease interval DEFAULT NULL)
  RETURNS boolean AS 'MODULE_PATHNAME', 'idem_claim'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.claim(text, text, text, boolean, interval) IS
  'Claims an idempotency key in this transaction: true if this transaction now owns it, false if an earlier one already did the work';

CREATE FUNCTION idem.claim_many(keys text[], scope text DEFAULT 'default')
  RETURNS SETOF text AS 'MODULE_PATHNAME', 'idem_claim_many'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 100;
COMMENT ON FUNCTION idem.claim_many(text[], text) IS
  'Claims a batch of keys in one statement; returns the keys this transaction now owns';

CREATE FUNCTION idem.complete(key text, result jsonb DEFAULT NULL, scope text DEFAULT 'default')
  RETURNS void AS 'MODULE_PATHNAME', 'idem_complete'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.complete(text, jsonb, text) IS
  'Marks a claimed key done and stores its result';

CREATE FUNCTION idem.save_point(key text, recovery_point text, scope text DEFAULT 'default')
  RETURNS void AS 'MODULE_PATHNAME', 'idem_save_point'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.save_point(text, text, text) IS
  'Records the progress of a leased key and renews its lease';

CREATE FUNCTION idem.result(key text, scope text DEFAULT 'default')
  RETURNS jsonb AS 'MODULE_PATHNAME', 'idem_result'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.result(text, text) IS
  'The stored result of a key (NULL if none)';

CREATE FUNCTION idem.once(key text, query text, scope text DEFAULT 'default', fingerprint text DEFAULT NULL)
  RETURNS jsonb AS 'MODULE_PATHNAME', 'idem_once'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.once(text, text, text, text) IS
  'Runs query once per key (claim, run, store its rows as a jsonb array); a repeat returns the stored result without running anything';

CREATE FUNCTION idem.key_status(key text, scope text DEFAULT 'default')
  RETURNS TABLE(state text, fingerprint text, result jsonb, recovery_point text,
                claimed_at timestamptz, completed_at timestamptz, lease_until timestamptz)
  AS 'MODULE_PATHNAME', 'idem_key_status'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.key_status(text, text) IS
  'The state of a key: in_progress, expired (a lease ran out), or done; no row if never claimed';

CREATE FUNCTION idem.forget(key text, scope text DEFAULT 'default')
  RETURNS boolean AS 'MODULE_PATHNAME', 'idem_forget'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.forget(text, text) IS
  'Deletes a key so that it can be claimed again; true if it existed';

CREATE FUNCTION idem.purge_keys(older_than interval, scope text DEFAULT NULL)
  RETURNS bigint AS 'MODULE_PATHNAME', 'idem_purge_keys'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.purge_keys(interval, text) IS
  'Deletes keys older than the given age (of one scope, or of every scope for a superuser), except live leases';

-- ---------------------------------------------------------------------------
-- Family 3, second block: checkpoints that travel with the data.
-- Watermarks are typed: the type is fixed by a job's first value, values are
-- compared with the type's own ordering, and stored as canonical text (ISO
-- dates, UTC timestamps) that reads the same in every session.
CREATE TABLE idem.checkpoints (
  job text PRIMARY KEY,
  value_type regtype,
  watermark text,
  updated_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
REVOKE ALL ON idem.checkpoints FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('idem.checkpoints', '');
COMMENT ON TABLE idem.checkpoints IS
  'One row per job: its watermark (canonical text) and the type it is compared as';

CREATE TABLE idem.checkpoint_log (
  id bigserial PRIMARY KEY,
  job text NOT NULL,
  action text NOT NULL,
  old_value text,
  new_value text,
  at timestamptz NOT NULL DEFAULT pg_catalog.now(),
  by_role name NOT NULL
);
REVOKE ALL ON idem.checkpoint_log FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('idem.checkpoint_log', '');
SELECT pg_catalog.pg_extension_config_dump('idem.checkpoint_log_id_seq', '');
COMMENT ON SEQUENCE idem.checkpoint_log_id_seq IS 'Numbers the rows of idem.checkpoint_log';
COMMENT ON TABLE idem.checkpoint_log IS
  'The record every idem.rewind leaves: who moved which watermark back, from what to what';

CREATE TABLE idem.windows (
  job text NOT NULL,
  lo text NOT NULL,
  hi text NOT NULL,
  done_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
  PRIMARY KEY (job, lo, hi)
);
REVOKE ALL ON idem.windows FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('idem.windows', '');
COMMENT ON TABLE idem.windows IS
  'The window ledger: which [lo, hi) windows of a windowed job are done';

CREATE FUNCTION idem.watermark(job text) RETURNS text
  AS 'MODULE_PATHNAME', 'idem_watermark'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.watermark(text) IS
  'The job''s watermark in canonical text (ISO dates, UTC timestamps), or NULL';

CREATE FUNCTION idem.watermark(job text, as_type anyelement) RETURNS anyelement
  AS 'MODULE_PATHNAME', 'idem_watermark_typed'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.watermark(text, anyelement) IS
  'The job''s watermark as a value of its type: watermark(''job'', NULL::timestamptz); another type is 42804';

CREATE FUNCTION idem.lock_job(job text, nowait boolean DEFAULT false) RETURNS text
  AS 'MODULE_PATHNAME', 'idem_lock_job'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.lock_job(text, boolean) IS
  'Holds the job for the rest of the transaction (concurrent runners queue, or 55P03 with nowait) and returns its watermark';

CREATE FUNCTION idem.advance(job text, watermark anyelement, expected text DEFAULT NULL) RETURNS void
  AS 'MODULE_PATHNAME', 'idem_advance'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.advance(text, anyelement, text) IS
  'Moves the watermark forward in this transaction (never back: 22023); with expected, a compare-and-set (40001 when stale)';

CREATE FUNCTION idem.rewind(job text, watermark anyelement) RETURNS void
  AS 'MODULE_PATHNAME', 'idem_rewind'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.rewind(text, anyelement) IS
  'Sets the watermark to any value, backwards included, and records it in idem.checkpoint_log';

CREATE FUNCTION idem.run_once(job text, watermark anyelement, query text) RETURNS boolean
  AS 'MODULE_PATHNAME', 'idem_run_once'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.run_once(text, anyelement, text) IS
  'If watermark is past the job''s, runs query and advances, in one transaction (true); else does nothing (false)';

CREATE FUNCTION idem.mark_window(job text, lo anyelement, hi anyelement) RETURNS void
  AS 'MODULE_PATHNAME', 'idem_mark_window'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.mark_window(text, anyelement, anyelement) IS
  'Records the window [lo, hi) of a windowed job as done, in this transaction';

CREATE FUNCTION idem.windows(job text) RETURNS TABLE(lo text, hi text, done_at timestamptz)
  AS 'MODULE_PATHNAME', 'idem_windows'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.windows(text) IS
  'The done windows of a job, in order';

CREATE FUNCTION idem.gaps(job text, from_value anyelement, to_value anyelement, step interval)
  RETURNS TABLE(lo text, hi text)
  AS 'MODULE_PATHNAME', 'idem_gaps'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.gaps(text, anyelement, anyelement, interval) IS
  'The windows [lo, lo + step) between from_value and to_value (dates, timestamps) that are not done';

CREATE FUNCTION idem.gaps(job text, from_value anyelement, to_value anyelement, step anyelement)
  RETURNS TABLE(lo text, hi text)
  AS 'MODULE_PATHNAME', 'idem_gaps'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.gaps(text, anyelement, anyelement, anyelement) IS
  'The windows [lo, lo + step) between from_value and to_value (integers, numerics) that are not done';

-- ---------------------------------------------------------------------------
-- The test that proves it: run it twice and compare checksums.
CREATE FUNCTION idem.assert_rerun_safe(job text, tables regclass[], runs int DEFAULT 2,
                                       exclude_columns text[] DEFAULT '{}', rollback boolean DEFAULT true)
  RETURNS TABLE(run int, table_name regclass, row_count bigint, checksum text)
  AS 'MODULE_PATHNAME', 'idem_assert_rerun_safe'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.assert_rerun_safe(text, regclass[], int, text[], boolean) IS
  'Runs job (any SQL) several times and raises ID002 naming the first table a later run changed; with rollback (default) leaves the database as it was';

-- ---------------------------------------------------------------------------
-- Family 4: immutable versions behind a view. A dataset is a view (schema +
-- name); each version is a table <name>__v<n> in the same schema, built once
-- and never written again; publish flips the view in the caller's
-- transaction.
CREATE TABLE idem.datasets (
  schema_name text NOT NULL,
  view_name text NOT NULL,
  current_version int,
  next_version int NOT NULL DEFAULT 1,
  flipped_at timestamptz,
  PRIMARY KEY (schema_name, view_name)
);
REVOKE ALL ON idem.datasets FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('idem.datasets', '');
COMMENT ON TABLE idem.datasets IS 'Published datasets: the view, its current version and the next version number';

CREATE TABLE idem.dataset_versions (
  schema_name text NOT NULL,
  view_name text NOT NULL,
  version int NOT NULL,
  relation regclass NOT NULL,
  row_count bigint NOT NULL,
  checksum text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
  pinned boolean NOT NULL DEFAULT false,
  PRIMARY KEY (schema_name, view_name, version)
);
REVOKE ALL ON idem.dataset_versions FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('idem.dataset_versions', '');
COMMENT ON TABLE idem.dataset_versions IS 'The kept versions of each dataset: their table, row count and v1 checksum';

CREATE FUNCTION idem.publish(dataset text, query text, keep int DEFAULT 5, audit text DEFAULT NULL,
                             lock_timeout interval DEFAULT NULL) RETURNS int
  AS 'MODULE_PATHNAME', 'idem_publish'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.publish(text, text, int, text, interval) IS
  'Builds an immutable version of the dataset from query, audits it, and flips the view to it in this transaction; the same content publishes nothing';

CREATE FUNCTION idem.rollback(dataset text, version int DEFAULT NULL, lock_timeout interval DEFAULT NULL) RETURNS int
  AS 'MODULE_PATHNAME', 'idem_rollback'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.rollback(text, int, interval) IS
  'Flips the dataset''s view back to the previous (or the given) kept version';

CREATE FUNCTION idem.versions(dataset text)
  RETURNS TABLE(version int, relation regclass, row_count bigint, checksum text,
                created_at timestamptz, is_current boolean, pinned boolean)
  AS 'MODULE_PATHNAME', 'idem_versions'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.versions(text) IS 'The kept versions of a dataset';

CREATE FUNCTION idem.pin(dataset text, version int, pinned boolean DEFAULT true) RETURNS void
  AS 'MODULE_PATHNAME', 'idem_pin'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.pin(text, int, boolean) IS 'Pins (or unpins) a version so that retention keeps it';

-- ---------------------------------------------------------------------------
-- Family 1: overwrite the unit of work. (swap_partition and mode 'swap' are
-- not built yet.)
CREATE FUNCTION idem.replace_where(target regclass, predicate text, query text,
                                   lock_timeout interval DEFAULT NULL)
  RETURNS TABLE(deleted bigint, inserted bigint)
  AS 'MODULE_PATHNAME', 'idem_replace_where'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.replace_where(regclass, text, text, interval) IS
  'Replaces the rows matching predicate by the rows of query (columns by position), in this transaction; the same rows write nothing';

CREATE FUNCTION idem.overwrite_partition(parent regclass, value anyelement, query text,
                                         mode text DEFAULT 'rewrite', keep_old boolean DEFAULT false,
                                         lock_timeout interval DEFAULT NULL)
  RETURNS TABLE(action text, row_count bigint)
  AS 'MODULE_PATHNAME', 'idem_overwrite_partition'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.overwrite_partition(regclass, anyelement, text, text, boolean, interval) IS
  'Overwrites the partition that holds value with the rows of query (skipped when they are the same rows)';

CREATE FUNCTION idem.overwrite_partition(parent regclass, value text, query text,
                                         mode text DEFAULT 'rewrite', keep_old boolean DEFAULT false,
                                         lock_timeout interval DEFAULT NULL)
  RETURNS TABLE(action text, row_count bigint)
  AS 'MODULE_PATHNAME', 'idem_overwrite_partition_text'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.overwrite_partition(regclass, text, text, text, boolean, interval) IS
  'overwrite_partition with the value as text, cast to the partition key''s type';

-- ---------------------------------------------------------------------------
-- State of dropped user tables goes with them: a merge target's tombstones
-- are deleted when the table is dropped (their regclass would otherwise
-- dangle, and a new table could reuse the OID).
CREATE FUNCTION idem._forget_dropped() RETURNS event_trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  DELETE FROM idem.tombstones t
   USING pg_catalog.pg_event_trigger_dropped_objects() d
   WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
     AND d.objsubid OPERATOR(pg_catalog.=) 0
     AND t.target::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
END
$$;
REVOKE ALL ON FUNCTION idem._forget_dropped() FROM PUBLIC;
COMMENT ON FUNCTION idem._forget_dropped() IS
  'Internal: deletes the tombstones of tables being dropped (sql_drop event trigger)';
CREATE EVENT TRIGGER idem_forget_dropped ON sql_drop
  EXECUTE FUNCTION idem._forget_dropped();
COMMENT ON EVENT TRIGGER idem_forget_dropped IS
  'Deletes idem''s tombstones of a dropped table';
