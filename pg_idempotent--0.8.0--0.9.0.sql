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

DROP FUNCTION idem.overwrite_partition(regclass, anyelement, text, text, boolean, interval);
CREATE FUNCTION idem.overwrite_partition(parent regclass, value anyelement, query text,
                                         mode text DEFAULT 'rewrite', keep_old boolean DEFAULT false,
                                         lock_timeout interval DEFAULT NULL,
                                         accept_losses boolean DEFAULT false)
  RETURNS TABLE(action text, row_count bigint)
  AS 'MODULE_PATHNAME', 'idem_overwrite_partition'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.overwrite_partition(regclass, anyelement, text, text, boolean, interval, boolean) IS
  'Overwrites the partition that holds value with the rows of query: rewritten in place (mode rewrite) or swapped (mode swap); skipped when they are the same rows; accept_losses: swap even if the new table cannot carry something of the old partition';

DROP FUNCTION idem.overwrite_partition(regclass, text, text, text, boolean, interval);
CREATE FUNCTION idem.overwrite_partition(parent regclass, value text, query text,
                                         mode text DEFAULT 'rewrite', keep_old boolean DEFAULT false,
                                         lock_timeout interval DEFAULT NULL,
                                         accept_losses boolean DEFAULT false)
  RETURNS TABLE(action text, row_count bigint)
  AS 'MODULE_PATHNAME', 'idem_overwrite_partition_text'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.overwrite_partition(regclass, text, text, text, boolean, interval, boolean) IS
  'overwrite_partition with the value as text, cast to the partition key''s type';

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
                                 on_schema_change text DEFAULT 'fail')
  RETURNS TABLE(inserted bigint, updated bigint, deleted bigint, unchanged bigint, stale bigint)
  AS 'MODULE_PATHNAME', 'idem_merge_query'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.merge_query(regclass, text, text[], text, text, boolean, text, text[], boolean, boolean, text[], text) IS
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
                                  on_schema_change text DEFAULT 'fail')
  RETURNS TABLE(inserted bigint, duplicate bigint, conflicting bigint)
  AS 'MODULE_PATHNAME', 'idem_append_query'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.append_query(regclass, text, text[], text[], text, interval, text) IS
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
                              on_schema_change text DEFAULT 'fail')
  RETURNS TABLE(inserted bigint, changed bigint, deleted bigint, unchanged bigint, stale bigint)
  AS 'MODULE_PATHNAME', 'idem_snapshot_query'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.snapshot_query(regclass, text, text[], text, text, text[], text[], text, text, text, timestamptz, boolean, text, text, text) IS
  'idem.snapshot with the source given as a query (run once, as the caller, under the caller''s search_path)';
