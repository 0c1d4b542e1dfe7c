-- pg_idempotent 0.8.0 -> 0.9.0
\echo Use "ALTER EXTENSION pg_idempotent UPDATE TO '0.9.0'" to load this file. \quit

-- idem._tombstones(regclass) shares its name with the array type of the
-- table idem.tombstones (_tombstones): a call with an untyped literal,
-- idem._tombstones('public.x'), is read as a cast to that type and fails
-- with "malformed array literal". The function is idem._tombstones_of
-- (issue 41); the old name keeps working for this release, with a NOTICE.
CREATE FUNCTION idem._tombstones_of(target regclass)
  RETURNS TABLE(key_digest uuid, version text)
  AS 'MODULE_PATHNAME', 'idem__tombstones'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem._tombstones_of(regclass) IS
  'Internal: the tombstones of a merge target (versions in canonical text); needs SELECT on the whole target';
GRANT EXECUTE ON FUNCTION idem._tombstones_of(regclass) TO PUBLIC;

CREATE OR REPLACE FUNCTION idem._tombstones(target regclass)
  RETURNS TABLE(key_digest uuid, version text)
  LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
  SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  RAISE NOTICE 'idem._tombstones is deprecated: call idem._tombstones_of'
    USING HINT = 'The old name is read as a cast to the array type idem._tombstones when called with an untyped literal; it goes in the next release.';
  RETURN QUERY SELECT t.key_digest, t.version FROM idem._tombstones_of(target) AS t;
END
$$;
COMMENT ON FUNCTION idem._tombstones(regclass) IS
  'Deprecated (0.9.0): idem._tombstones_of, under a name that is not a type''s';

-- assert_rerun_safe proves only what it watched (issue 42): a run 1 that
-- changes none of the tables raises ID007 unless allow_unchanged, and
-- created_tables names tables the job creates (absent before run 1). Both
-- are new parameters with defaults at the end, so every call of 0.8.0 keeps
-- its meaning; the function is re-created because a parameter is added.
DROP FUNCTION idem.assert_rerun_safe(text, regclass[], int, text[], boolean);
CREATE FUNCTION idem.assert_rerun_safe(job text, tables regclass[], runs int DEFAULT 2,
                                       exclude_columns text[] DEFAULT '{}', rollback boolean DEFAULT true,
                                       allow_unchanged boolean DEFAULT false,
                                       created_tables text[] DEFAULT '{}')
  RETURNS TABLE(run int, table_name regclass, row_count bigint, checksum text)
  AS 'MODULE_PATHNAME', 'idem_assert_rerun_safe'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.assert_rerun_safe(text, regclass[], int, text[], boolean, boolean, text[]) IS
  'Runs job (any SQL) several times and raises ID002 naming the first table a later run changed, ID007 when run 1 changed none (unless allow_unchanged); created_tables: tables the job creates; with rollback (default) leaves the database as it was';

-- idem._raise in C (issue 42): as PL/pgSQL, every error it raised carried
-- "CONTEXT: PL/pgSQL function idem._raise(text,text,text,text) line 3 at
-- RAISE", which names an internal and tells a user nothing.
CREATE OR REPLACE FUNCTION idem._raise(code text, message text, detail text, hint text)
  RETURNS boolean
  AS 'MODULE_PATHNAME', 'idem__raise'
  LANGUAGE C VOLATILE PARALLEL SAFE;

-- Bind parameters (issue 44): idem.params(v1, v2, ...) makes the values
-- that a function binds to $1, $2, ... of the SQL text it takes (a query, a
-- predicate, an audit), each of its own type, never spliced into the text.
-- The values travel as their types' canonical text (ISO dates, UTC
-- timestamps), so a value made in one session reads back the same in any.
CREATE TYPE idem.query_params AS (types regtype[], "values" text[]);
COMMENT ON TYPE idem.query_params IS
  'Values to bind to $1, $2, ... of a function''s SQL text, each with its type: made by idem.params(v1, v2, ...)';
CREATE FUNCTION idem.params(VARIADIC "any") RETURNS idem.query_params
  AS 'MODULE_PATHNAME', 'idem_params'
  LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION idem.params("any") IS
  'The values to bind to $1, $2, ... of the query (and predicate or audit) of merge_query, append_query, snapshot_query, overwrite_partition, replace_where, publish and checksum_query: pass params => idem.params(v1, v2, ...)';

-- The run history records the values a run bound (capped: 20 values of 200
-- characters at most).
ALTER TABLE idem.run_log ADD COLUMN params jsonb;
COMMENT ON COLUMN idem.run_log.params IS
  'The values bound to the run''s SQL ($1, $2, ...: [{"type": ..., "value": ...}]), NULL for none';
CREATE OR REPLACE VIEW idem.run_history WITH (security_barrier) AS
SELECT l.id, l.started_at, l.started_at OPERATOR(pg_catalog.+) l.duration AS finished_at, l.duration,
       l.function_name, l.target, l.unit, l.action, l.counts, l.rows_written, l.transaction_id,
       l.role_name, l.session_role, l.application_name, l.backend_pid, l.params
  FROM idem.run_log l
 WHERE pg_catalog.pg_has_role(l.role::pg_catalog.oid, 'MEMBER')
    OR (SELECT r.rolsuper FROM pg_catalog.pg_roles r
         WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER);

-- A swap refuses, before any work, what the new table cannot carry from the
-- old partition (issue 43: extended statistics, security labels, an explicit
-- publication membership, privileges another role granted), unless the
-- caller passes accept_losses => true. A new parameter with a default at the
-- end: every call of 0.8.0 keeps its arguments, and one that would lose
-- something is now 0A000 instead of a silent loss.
DROP FUNCTION idem.swap_partition(regclass, regclass, boolean, interval);
CREATE FUNCTION idem.swap_partition(partition regclass, staging regclass,
                                    keep_old boolean DEFAULT false,
                                    lock_timeout interval DEFAULT NULL,
                                    accept_losses boolean DEFAULT false)
  RETURNS regclass
  AS 'MODULE_PATHNAME', 'idem_swap_partition'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.swap_partition(regclass, regclass, boolean, interval, boolean) IS
  'Replaces a partition by a fully built staging table, atomically, in this transaction; returns the new partition; accept_losses: swap even if the new table cannot carry something of the old partition';

-- overwrite_partition also takes create_partition and params (issue 44:
-- a day without a partition, bind parameters), and returns the sizes of the
-- change after today's columns (action, row_count): rows_before,
-- rows_after, rows_differing (NULL where unknown).
DROP FUNCTION idem.overwrite_partition(regclass, anyelement, text, text, boolean, interval);
CREATE FUNCTION idem.overwrite_partition(parent regclass, value anyelement, query text,
                                         mode text DEFAULT 'rewrite', keep_old boolean DEFAULT false,
                                         lock_timeout interval DEFAULT NULL,
                                         accept_losses boolean DEFAULT false,
                                         create_partition boolean DEFAULT false,
                                         params idem.query_params DEFAULT NULL)
  RETURNS TABLE(action text, row_count bigint, rows_before bigint, rows_after bigint, rows_differing bigint)
  AS 'MODULE_PATHNAME', 'idem_overwrite_partition'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.overwrite_partition(regclass, anyelement, text, text, boolean, interval, boolean, boolean, idem.query_params) IS
  'Overwrites the partition that holds value with the rows of query: rewritten in place (mode rewrite) or swapped (mode swap); skipped when they are the same rows; accept_losses: swap even if the new table cannot carry something of the old partition; create_partition: make the missing partition';

DROP FUNCTION idem.overwrite_partition(regclass, text, text, text, boolean, interval);
CREATE FUNCTION idem.overwrite_partition(parent regclass, value text, query text,
                                         mode text DEFAULT 'rewrite', keep_old boolean DEFAULT false,
                                         lock_timeout interval DEFAULT NULL,
                                         accept_losses boolean DEFAULT false,
                                         create_partition boolean DEFAULT false,
                                         params idem.query_params DEFAULT NULL)
  RETURNS TABLE(action text, row_count bigint, rows_before bigint, rows_after bigint, rows_differing bigint)
  AS 'MODULE_PATHNAME', 'idem_overwrite_partition_text'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.overwrite_partition(regclass, text, text, text, boolean, interval, boolean, boolean, idem.query_params) IS
  'overwrite_partition with the value as text, cast to the partition key''s type';

-- replace_where: params, and the result's action and sizes after today's
-- (deleted, inserted), whose 0 | 0 read like an empty unit.
DROP FUNCTION idem.replace_where(regclass, text, text, interval);
CREATE FUNCTION idem.replace_where(target regclass, predicate text, query text,
                                   lock_timeout interval DEFAULT NULL,
                                   params idem.query_params DEFAULT NULL)
  RETURNS TABLE(deleted bigint, inserted bigint, action text, rows_before bigint, rows_after bigint,
                rows_differing bigint)
  AS 'MODULE_PATHNAME', 'idem_replace_where'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.replace_where(regclass, text, text, interval, idem.query_params) IS
  'Replaces the rows matching predicate by the rows of query (columns by position), in this transaction; the same rows write nothing; params are bound to $1, $2, ... of both';

DROP FUNCTION idem.publish(text, text, int, text, interval);
CREATE FUNCTION idem.publish(dataset text, query text, keep int DEFAULT 5, audit text DEFAULT NULL,
                             lock_timeout interval DEFAULT NULL, params idem.query_params DEFAULT NULL)
  RETURNS int
  AS 'MODULE_PATHNAME', 'idem_publish'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.publish(text, text, int, text, interval, idem.query_params) IS
  'Builds an immutable version of the dataset from query, audits it, and flips the view to it in this transaction; the same content publishes nothing; params are bound to $1, $2, ... of query and audit';

DROP FUNCTION idem.checksum_query(text);
CREATE FUNCTION idem.checksum_query(query text, params idem.query_params DEFAULT NULL)
  RETURNS text
  AS 'MODULE_PATHNAME', 'idem_checksum_query'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.checksum_query(text, idem.query_params) IS
  'The v1 checksum of the rows a query returns (one statement, run as the caller under the caller''s search_path), params bound to its $1, $2, ...';

-- ---------------------------------------------------------------------------
-- Staging tables and schema drift (issue 44): exclude_columns may name a
-- column of either side (a staging column the target lacks is left out of
-- the batch), and on_schema_change (dbt's names: 'fail', the default,
-- 'ignore', 'append_new_columns') says what becomes of any other source
-- column the target lacks. New parameters with defaults at the end: every
-- call of 0.8.0 keeps its meaning. A parameter cannot be added in place, so
-- each function is re-created with its comment.
DROP FUNCTION idem.merge(regclass, regclass, text[], text, text, boolean, text, text[], boolean, boolean, text[]);
CREATE FUNCTION idem.merge(target regclass, source regclass,
                           key text[] DEFAULT NULL,
                           version_column text DEFAULT NULL,
                           delete_column text DEFAULT NULL,
                           delete_missing boolean DEFAULT false,
                           delete_scope text DEFAULT NULL,
                           columns text[] DEFAULT NULL,
                           allow_empty boolean DEFAULT false,
                           dry_run boolean DEFAULT false,
                           exclude_columns text[] DEFAULT NULL,
                           on_schema_change text DEFAULT 'fail')
  RETURNS TABLE(inserted bigint, updated bigint, deleted bigint, unchanged bigint, stale bigint)
  AS 'MODULE_PATHNAME', 'idem_merge'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.merge(regclass, regclass, text[], text, text, boolean, text, text[], boolean, boolean, text[], text) IS
  'Merges a source table or view into target on the business key: inserts new keys, updates changed rows, never touches unchanged ones; versions, deletes and tombstones; exclude_columns and on_schema_change for staging columns and schema drift';

DROP FUNCTION idem.merge_query(regclass, text, text[], text, text, boolean, text, text[], boolean, boolean, text[]);
CREATE FUNCTION idem.merge_query(target regclass, query text,
                                 key text[] DEFAULT NULL,
                                 version_column text DEFAULT NULL,
                                 delete_column text DEFAULT NULL,
                                 delete_missing boolean DEFAULT false,
                                 delete_scope text DEFAULT NULL,
                                 columns text[] DEFAULT NULL,
                                 allow_empty boolean DEFAULT false,
                                 dry_run boolean DEFAULT false,
                                 exclude_columns text[] DEFAULT NULL,
                                 on_schema_change text DEFAULT 'fail',
                                 params idem.query_params DEFAULT NULL)
  RETURNS TABLE(inserted bigint, updated bigint, deleted bigint, unchanged bigint, stale bigint)
  AS 'MODULE_PATHNAME', 'idem_merge_query'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.merge_query(regclass, text, text[], text, text, boolean, text, text[], boolean, boolean, text[], text, idem.query_params) IS
  'idem.merge with the source given as a query (run once, as the caller, under the caller''s search_path)';

DROP FUNCTION idem.append(regclass, regclass, text[], text[], text, interval);
CREATE FUNCTION idem.append(target regclass, source regclass,
                            key text[] DEFAULT NULL,
                            exclude_columns text[] DEFAULT NULL,
                            on_conflict text DEFAULT 'error',
                            within interval DEFAULT NULL,
                            on_schema_change text DEFAULT 'fail')
  RETURNS TABLE(inserted bigint, duplicate bigint, conflicting bigint)
  AS 'MODULE_PATHNAME', 'idem_append'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.append(regclass, regclass, text[], text[], text, interval, text) IS
  'Appends the events of a source table or view to target once each, keyed by the event id: an event already there with the same content is a duplicate (counted, not written), with other content an error (ID005) or, with on_conflict => ''keep_first'', counted and left';

DROP FUNCTION idem.append_query(regclass, text, text[], text[], text, interval);
CREATE FUNCTION idem.append_query(target regclass, query text,
                                  key text[] DEFAULT NULL,
                                  exclude_columns text[] DEFAULT NULL,
                                  on_conflict text DEFAULT 'error',
                                  within interval DEFAULT NULL,
                                  on_schema_change text DEFAULT 'fail',
                                  params idem.query_params DEFAULT NULL)
  RETURNS TABLE(inserted bigint, duplicate bigint, conflicting bigint)
  AS 'MODULE_PATHNAME', 'idem_append_query'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.append_query(regclass, text, text[], text[], text, interval, text, idem.query_params) IS
  'idem.append with the events given as a query (run once, as the caller, under the caller''s search_path)';

DROP FUNCTION idem.snapshot(regclass, regclass, text[], text, text, text[], text[], text, text, text, timestamptz, boolean, text, text);
CREATE FUNCTION idem.snapshot(target regclass, source regclass,
                              key text[],
                              strategy text DEFAULT 'check',
                              updated_at text DEFAULT NULL,
                              columns text[] DEFAULT NULL,
                              exclude_columns text[] DEFAULT NULL,
                              hard_deletes text DEFAULT 'ignore',
                              valid_from text DEFAULT 'valid_from',
                              valid_to text DEFAULT 'valid_to',
                              as_of timestamptz DEFAULT NULL,
                              allow_empty boolean DEFAULT false,
                              deleted_column text DEFAULT 'is_deleted',
                              valid_to_current text DEFAULT NULL,
                              on_schema_change text DEFAULT 'fail')
  RETURNS TABLE(inserted bigint, changed bigint, deleted bigint, unchanged bigint, stale bigint)
  AS 'MODULE_PATHNAME', 'idem_snapshot'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.snapshot(regclass, regclass, text[], text, text, text[], text[], text, text, text, timestamptz, boolean, text, text, text) IS
  'Keeps target as the history (SCD type 2) of a source table or view on key: opens a version for every new or changed key, closes the version a change (or, with hard_deletes => ''invalidate'' or ''new_record'', a deletion) ends; a rerun writes nothing';

DROP FUNCTION idem.snapshot_query(regclass, text, text[], text, text, text[], text[], text, text, text, timestamptz, boolean, text, text);
CREATE FUNCTION idem.snapshot_query(target regclass, query text,
                              key text[],
                              strategy text DEFAULT 'check',
                              updated_at text DEFAULT NULL,
                              columns text[] DEFAULT NULL,
                              exclude_columns text[] DEFAULT NULL,
                              hard_deletes text DEFAULT 'ignore',
                              valid_from text DEFAULT 'valid_from',
                              valid_to text DEFAULT 'valid_to',
                              as_of timestamptz DEFAULT NULL,
                              allow_empty boolean DEFAULT false,
                              deleted_column text DEFAULT 'is_deleted',
                              valid_to_current text DEFAULT NULL,
                              on_schema_change text DEFAULT 'fail',
                              params idem.query_params DEFAULT NULL)
  RETURNS TABLE(inserted bigint, changed bigint, deleted bigint, unchanged bigint, stale bigint)
  AS 'MODULE_PATHNAME', 'idem_snapshot_query'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.snapshot_query(regclass, text, text[], text, text, text[], text[], text, text, text, timestamptz, boolean, text, text, text, idem.query_params) IS
  'idem.snapshot with the source given as a query (run once, as the caller, under the caller''s search_path)';

-- ---------------------------------------------------------------------------
-- A rollback that holds (issue 44): after idem.rollback, the next scheduled
-- publish of the same query on unchanged data published the rolled-back
-- content again. A hold (rollback's hold => true, or idem.hold) makes
-- publish build nothing and say so (a NOTICE, action 'held' in the run
-- history) until idem.release. Without one (the default) a rollback lasts
-- until the next publish of other content, as before.
ALTER TABLE idem.datasets ADD COLUMN held_at timestamptz, ADD COLUMN held_by text;
COMMENT ON COLUMN idem.datasets.held_at IS 'When a hold on publish began (NULL: not held)';
COMMENT ON COLUMN idem.datasets.held_by IS 'The role that set the hold';

-- Publish at build speed (issue 45): each version keeps a sample of its
-- rows' hashes, so that a publish of new content stops reading its query at
-- the first row that proves it differs from the current version (the
-- version is then built and checksummed in one pass over the query).
ALTER TABLE idem.dataset_versions ADD COLUMN row_sample bytea;
-- Hashes do not compress: stored out of line without the attempt (a tenth
-- of a millisecond of a 10k-row publish went to pglz giving up).
ALTER TABLE idem.dataset_versions ALTER COLUMN row_sample SET STORAGE EXTERNAL;
COMMENT ON COLUMN idem.dataset_versions.row_sample IS
  'A sample of the version''s row hashes (modulus, then the sampled hashes; 8 bytes each, little-endian): a publish of other content stops reading its query at the first row outside it (NULL: a version that keeps none)';

DROP FUNCTION idem.rollback(text, int, interval);
CREATE FUNCTION idem.rollback(dataset text, version int DEFAULT NULL, lock_timeout interval DEFAULT NULL,
                              hold boolean DEFAULT false) RETURNS int
  AS 'MODULE_PATHNAME', 'idem_rollback'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.rollback(text, int, interval, boolean) IS
  'Flips the dataset''s view back to the previous (or the given) kept version; with hold => true, publish builds nothing until idem.release';

CREATE FUNCTION idem.hold(dataset text) RETURNS boolean
  AS 'MODULE_PATHNAME', 'idem_hold'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.hold(text) IS
  'Holds a published dataset: publish builds nothing (and says so) until idem.release; returns whether it was not held before';

CREATE FUNCTION idem.release(dataset text) RETURNS boolean
  AS 'MODULE_PATHNAME', 'idem_release'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.release(text) IS
  'Ends the hold on a dataset (idem.hold, or rollback''s hold => true); returns whether it was held';

CREATE FUNCTION idem.dataset_status(dataset text)
  RETURNS TABLE(current_version int, next_version int, flipped_at timestamptz, held boolean,
                held_at timestamptz, held_by text)
  AS 'MODULE_PATHNAME', 'idem_dataset_status'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.dataset_status(text) IS
  'A dataset''s current and next version, when the view last flipped, and whether publish is held (by whom, since when)';

-- ---------------------------------------------------------------------------
-- Side effects outside the database (issue 46): a transactional outbox. A
-- job records the intent of an effect (an HTTP call, an email, a charge) in
-- its own transaction, keyed; a dispatcher takes it with a lease and a
-- fencing token, makes the call with the key as the receiver's idempotency
-- key, and reports the outcome with the token (docs/effects.md).
CREATE SEQUENCE idem.effect_tokens;
REVOKE ALL ON SEQUENCE idem.effect_tokens FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('idem.effect_tokens', '');
COMMENT ON SEQUENCE idem.effect_tokens IS
  'The fencing tokens of effect deliveries: every take of an effect draws the next one';

CREATE TABLE idem.effects (
  scope text NOT NULL,
  key text NOT NULL,
  kind text NOT NULL,
  payload jsonb NOT NULL,
  state text NOT NULL DEFAULT 'pending',
  not_before timestamptz NOT NULL DEFAULT pg_catalog.now(),
  attempts int NOT NULL DEFAULT 0,
  max_attempts int NOT NULL DEFAULT 10,
  token bigint,
  lease_until timestamptz,
  dispatcher text,
  uncertain boolean NOT NULL DEFAULT false,
  last_error text,
  answer jsonb,
  recorded_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
  done_at timestamptz,
  -- (scope, kind) as a number (core/effect_lane.hpp), so that the indexes
  -- takes read hold 24-byte entries whatever the names and keys.
  lane int NOT NULL,
  PRIMARY KEY (scope, key)
);
-- No CHECK constraints: only the extension's functions write the table (no
-- other role has a privilege on it), each checks its values first (key of
-- 1 to 512 bytes, kind of 1 to 48, max_attempts >= 1, a state of pending,
-- leased, done or dead, a lease end exactly while leased; sql/effects.sql
-- verifies every row after each change), and PostgreSQL parses and plans
-- every CHECK of a table again on each INSERT or UPDATE statement: five of
-- them cost 30% of delivery (bench/README.md, "The outbox").
-- take_effects reads the deliverable and the expired effects of one lane
-- (scope and kind), oldest first; purge_effects the done ones by age. A
-- take walks past the entries of every effect taken since the last vacuum,
-- so the entries are kept narrow: the lane and a time, nothing else (with
-- the scope, kind and key in them, takes ran 25% slower at 100,000
-- effects). A lease has an end exactly while the effect is leased; the
-- leased index is defined by that end, not by the state, so that a report
-- (state 'leased', by key) never matches its predicate and always reads the
-- effect by its primary key.
CREATE INDEX effects_pending ON idem.effects (lane, not_before) WHERE state = 'pending';
CREATE INDEX effects_leased ON idem.effects (lane, lease_until) WHERE lease_until IS NOT NULL;
CREATE INDEX effects_done ON idem.effects (scope, done_at) WHERE state = 'done';
REVOKE ALL ON idem.effects FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('idem.effects', '');
COMMENT ON TABLE idem.effects IS
  'The outbox: one row per (scope, key) recorded by idem.record_effect or record_effects, with its delivery state';

-- Grants of kind 'effects' (granted like keys and checkpoints).
ALTER TABLE idem.usage_grant_rows DROP CONSTRAINT usage_grants_kind;
ALTER TABLE idem.usage_grant_rows
  ADD CONSTRAINT usage_grants_kind CHECK (kind IN ('keys', 'checkpoints', 'dataset', 'effects'));

CREATE OR REPLACE FUNCTION idem.grant_usage(role regrole, scope text, kind text) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  stored text := scope;
BEGIN
  IF role IS NULL OR scope IS NULL OR kind IS NULL THEN
    RAISE EXCEPTION 'role, scope and kind must not be NULL' USING ERRCODE = '22004',
      HINT = 'idem.grant_usage(role) alone grants every scope of every kind.';
  END IF;
  IF kind OPERATOR(pg_catalog.<>) ALL (ARRAY['keys', 'checkpoints', 'dataset', 'effects']) THEN
    RAISE EXCEPTION 'kind must be ''keys'', ''checkpoints'', ''dataset'' or ''effects'', not %', pg_catalog.quote_literal(kind)
      USING ERRCODE = '22023',
      HINT = 'keys: idempotency keys of the scope; checkpoints: the job named by the scope; dataset: the schema.view named by the scope; effects: the outbox of the scope.';
  END IF;
  IF scope OPERATOR(pg_catalog.=) '' THEN
    RAISE EXCEPTION 'scope must not be empty' USING ERRCODE = '22023',
      HINT = 'Name the scope, the job or the dataset; idem.grant_usage(role) alone grants every scope.';
  END IF;
  IF kind OPERATOR(pg_catalog.=) 'dataset' THEN
    stored := idem._dataset_scope(scope);
    IF stored IS NULL THEN
      RAISE EXCEPTION 'dataset % is not a schema-qualified view name', pg_catalog.quote_literal(scope)
        USING ERRCODE = '42602', HINT = 'Name it as schema.view, quoted as in SQL: ''sales."Daily"''.';
    END IF;
  END IF;
  -- A dropped role's grants go first: its OID could come back one day as
  -- another role's.
  PERFORM idem._purge_dropped_role_grants();
  INSERT INTO idem.usage_grant_rows (role, scope, kind) VALUES (grant_usage.role, stored, grant_usage.kind)
    ON CONFLICT DO NOTHING;
END
$$;
COMMENT ON FUNCTION idem.grant_usage(regrole, text, text) IS
  'Lets a role use one scope of one kind: the idempotency keys of a scope (''keys''), the checkpoints of a job (''checkpoints''), a dataset (''dataset'', named schema.view) or the outbox of a scope (''effects'')';

CREATE FUNCTION idem.record_effect(key text, kind text, payload jsonb DEFAULT '{}', scope text DEFAULT 'default',
                                   not_before timestamptz DEFAULT NULL, max_attempts int DEFAULT 10)
  RETURNS boolean AS 'MODULE_PATHNAME', 'idem_record_effect'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.record_effect(text, text, jsonb, text, timestamptz, int) IS
  'Records an effect to deliver in this transaction: true if recorded now, false if this key was already recorded with the same kind and payload (another is ID001)';

-- A rerun of record_effects compares every payload of its batch with the
-- stored one: by bytes first (src/pg_native/jsonb_same.hpp).
CREATE FUNCTION idem._jsonb_same(jsonb, jsonb) RETURNS boolean
  AS 'MODULE_PATHNAME', 'idem__jsonb_same'
  LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION idem._jsonb_same(jsonb, jsonb) IS
  'Internal (record_effects): a = b, the bytes compared before the values';

CREATE FUNCTION idem.record_effects(query text, kind text, scope text DEFAULT 'default', max_attempts int DEFAULT 10,
                                    params idem.query_params DEFAULT NULL)
  RETURNS TABLE(recorded bigint, already bigint) AS 'MODULE_PATHNAME', 'idem_record_effects'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.record_effects(text, text, text, int, idem.query_params) IS
  'Records the effects a query returns (key text, payload jsonb, optionally not_before timestamptz) in one statement; returns how many were recorded now and how many rows found their effect there already (recorded before, or by an earlier row of the batch)';

CREATE FUNCTION idem.take_effects(kind text, n int DEFAULT 1, lease interval DEFAULT '30 seconds',
                                  scope text DEFAULT 'default', dispatcher text DEFAULT NULL)
  RETURNS TABLE(key text, payload jsonb, token bigint, attempt int, uncertain boolean, lease_until timestamptz)
  AS 'MODULE_PATHNAME', 'idem_take_effects'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 10;
COMMENT ON FUNCTION idem.take_effects(text, int, interval, text, text) IS
  'Takes up to n deliverable effects of a kind (concurrent dispatchers never take the same one), each with a lease and a new fencing token';

CREATE FUNCTION idem.renew_effect(key text, token bigint, lease interval DEFAULT '30 seconds',
                                  scope text DEFAULT 'default')
  RETURNS timestamptz AS 'MODULE_PATHNAME', 'idem_renew_effect'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.renew_effect(text, bigint, interval, text) IS
  'Extends the lease of a taken effect; ID004 when the token no longer owns it';

CREATE FUNCTION idem.effect_done(key text, token bigint, answer jsonb DEFAULT NULL, scope text DEFAULT 'default')
  RETURNS void AS 'MODULE_PATHNAME', 'idem_effect_done'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.effect_done(text, bigint, jsonb, text) IS
  'Reports a taken effect delivered, with the receiver''s answer; ID004 (nothing changed) when the token no longer owns it';

CREATE FUNCTION idem.effects_done(keys text[], tokens bigint[], answers jsonb[] DEFAULT NULL,
                                  scope text DEFAULT 'default')
  RETURNS bigint AS 'MODULE_PATHNAME', 'idem_effects_done'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.effects_done(text[], bigint[], jsonb[], text) IS
  'Reports the effects keys[i] taken with tokens[i] delivered (with answers[i]) in one statement, all or none: ID004 (nothing changed) when a token no longer owns its effect; returns how many';

CREATE FUNCTION idem.listen_effects(kind text, scope text DEFAULT 'default')
  RETURNS TABLE(rung boolean, settle_after xid8)
  AS 'MODULE_PATHNAME', 'idem_listen_effects'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.listen_effects(text, text) IS
  'For an idle dispatcher: LISTENs on idem_effects.<kind> and asks the recorders of the scope and kind to NOTIFY it (rung; false: poll); transactions older than settle_after may have recorded without notifying: take again once pg_snapshot_xmin(pg_current_snapshot()) > settle_after';

CREATE FUNCTION idem.unlisten_effects(kind text, scope text DEFAULT 'default')
  RETURNS void AS 'MODULE_PATHNAME', 'idem_unlisten_effects'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.unlisten_effects(text, text) IS
  'For a dispatcher with work again: stops what idem.listen_effects started (recorders stop notifying for it)';

CREATE FUNCTION idem.effect_failed(key text, token bigint, error text DEFAULT NULL, retry boolean DEFAULT true,
                                   retry_after interval DEFAULT NULL, scope text DEFAULT 'default')
  RETURNS text AS 'MODULE_PATHNAME', 'idem_effect_failed'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.effect_failed(text, bigint, text, boolean, interval, text) IS
  'Reports a taken effect not delivered: retried after a backoff (or retry_after) until max_attempts, then dead (at once with retry => false); returns the new state';

CREATE FUNCTION idem.effect_uncertain(key text, token bigint, error text DEFAULT NULL,
                                      retry_after interval DEFAULT NULL, scope text DEFAULT 'default')
  RETURNS text AS 'MODULE_PATHNAME', 'idem_effect_uncertain'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.effect_uncertain(text, bigint, text, interval, text) IS
  'Reports that a taken effect may have been delivered: retried like a failure, the next attempt marked uncertain (reconcile, or send again with the same key); returns the new state';

CREATE FUNCTION idem.effect_status(key text, scope text DEFAULT 'default')
  RETURNS TABLE(kind text, state text, payload jsonb, attempts int, max_attempts int, token bigint,
                not_before timestamptz, lease_until timestamptz, dispatcher text, uncertain boolean,
                last_error text, answer jsonb, recorded_at timestamptz, done_at timestamptz)
  AS 'MODULE_PATHNAME', 'idem_effect_status'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.effect_status(text, text) IS
  'The state of an effect by key (no row when none was recorded)';

CREATE FUNCTION idem.effect_counts(scope text DEFAULT 'default')
  RETURNS TABLE(kind text, state text, effects bigint, oldest timestamptz)
  AS 'MODULE_PATHNAME', 'idem_effect_counts'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 10;
COMMENT ON FUNCTION idem.effect_counts(text) IS
  'Effects of a scope per kind and state, with the oldest recorded';

CREATE FUNCTION idem.effect_keys(scope text DEFAULT 'default')
  RETURNS TABLE(key text, kind text, payload jsonb)
  AS 'MODULE_PATHNAME', 'idem_effect_keys'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1000;
COMMENT ON FUNCTION idem.effect_keys(text) IS
  'Every effect of a scope as a rerun must leave it (key, kind, payload): what pg_idempotent rerun --effects compares';

CREATE FUNCTION idem.retry_effect(key text, scope text DEFAULT 'default')
  RETURNS boolean AS 'MODULE_PATHNAME', 'idem_retry_effect'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.retry_effect(text, text) IS
  'Makes a dead effect deliverable again, its attempts counted from zero; returns whether it was dead';

CREATE FUNCTION idem.purge_effects(older_than interval, scope text DEFAULT 'default')
  RETURNS bigint AS 'MODULE_PATHNAME', 'idem_purge_effects'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.purge_effects(interval, text) IS
  'Deletes the effects of a scope delivered longer ago than older_than (a key recorded again after that is a new effect); returns how many';

-- Merge, append and snapshot compare each source row with its target row
-- by stored image: pairwise, without forming the two records that
-- record_image_eq(ROW(...), ROW(...)) compares (src/pg_native/images_equal.hpp).
-- Not STRICT: NULL equals NULL, as in record_image_eq.
CREATE FUNCTION idem._images_equal(VARIADIC "any") RETURNS boolean
  AS 'MODULE_PATHNAME', 'idem__images_equal'
  LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION idem._images_equal("any") IS
  'Internal (merge, append, snapshot): whether (a1, a2, ...) and (b1, b2, ...), passed as a1, b1, a2, b2, ..., have the same stored images, as record_image_eq of the two rows';
