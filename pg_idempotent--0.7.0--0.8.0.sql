-- pg_idempotent 0.7.0 -> 0.8.0.
-- (A fresh CREATE EXTENSION runs 0.1.0, then each upgrade script, then this.)
\echo Use "ALTER EXTENSION pg_idempotent UPDATE TO '0.8.0'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- The catalog SQL of swap_partition's "carry over" steps, as functions: the
-- statements that give the staging table what the partition it replaces has
-- and ATTACH does not carry (its ACLs, its row-level security policies, its
-- comments). They read the catalog as the caller and return the statements
-- for the caller to run; nothing here writes.
CREATE FUNCTION idem._acl_statements(source regclass, target regclass, target_name text)
  RETURNS SETOF text
  LANGUAGE sql STABLE STRICT PARALLEL SAFE SECURITY INVOKER
  SET search_path = pg_catalog, pg_temp
AS $$
  -- The table's ACL and each column's, as (column, privilege, grantee,
  -- grantable) items of either side; the grantor is not compared (it
  -- becomes the owner).
  WITH acls AS (
    SELECT 'o' AS side, NULL::pg_catalog.name AS col,
           COALESCE(c.relacl, pg_catalog.acldefault('r', c.relowner)) AS acl
      FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) source
    UNION ALL
    SELECT 's', NULL, COALESCE(c.relacl, pg_catalog.acldefault('r', c.relowner))
      FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) target
    UNION ALL
    SELECT 'o', a.attname, a.attacl FROM pg_catalog.pg_attribute a
     WHERE a.attrelid OPERATOR(pg_catalog.=) source AND a.attacl IS NOT NULL AND NOT a.attisdropped
    UNION ALL
    SELECT 's', a.attname, a.attacl FROM pg_catalog.pg_attribute a
     WHERE a.attrelid OPERATOR(pg_catalog.=) target AND a.attacl IS NOT NULL AND NOT a.attisdropped
  ),
  items AS (SELECT side, col, (pg_catalog.aclexplode(acl)).* FROM acls),
  wanted AS (SELECT col, privilege_type, grantee, is_grantable FROM items WHERE side OPERATOR(pg_catalog.=) 'o'),
  present AS (SELECT col, privilege_type, grantee, is_grantable FROM items WHERE side OPERATOR(pg_catalog.=) 's'),
  -- REVOKE what the target has and the source has not (step 1), then GRANT
  -- what the source has and the target has not (step 2).
  changes AS (
    SELECT 1 AS step, 'REVOKE' AS verb, ' FROM ' AS towards, r.* FROM (TABLE present EXCEPT TABLE wanted) r
    UNION ALL
    SELECT 2, 'GRANT', ' TO ', g.* FROM (TABLE wanted EXCEPT TABLE present) g
  )
  SELECT pg_catalog.concat(
           verb, ' ', privilege_type,
           ' (' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(col) OPERATOR(pg_catalog.||) ')',
           ' ON ', target_name, towards,
           CASE WHEN grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(grantee)) END,
           CASE WHEN step OPERATOR(pg_catalog.=) 2 AND is_grantable THEN ' WITH GRANT OPTION' END)
    FROM changes
   ORDER BY step, 1
$$;
COMMENT ON FUNCTION idem._acl_statements(regclass, regclass, text) IS
  'Internal (swap_partition): the REVOKE and GRANT statements, in order, that make the privileges of target (named target_name) on the table and its columns those of source';

CREATE FUNCTION idem._policy_statements(source regclass, target regclass, target_name text)
  RETURNS SETOF text
  LANGUAGE sql STABLE STRICT PARALLEL SAFE SECURITY INVOKER
  SET search_path = pg_catalog, pg_temp
AS $$
  SELECT pg_catalog.format('CREATE POLICY %I ON %s AS %s FOR %s TO %s%s%s',
           p.polname, target_name,
           CASE WHEN p.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
           CASE p.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE'
                         WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
           (SELECT pg_catalog.string_agg(CASE WHEN r OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                     ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(r)) END, ', ')
              FROM pg_catalog.unnest(p.polroles) r),
           ' USING (' OPERATOR(pg_catalog.||) pg_catalog.pg_get_expr(p.polqual, p.polrelid) OPERATOR(pg_catalog.||) ')',
           ' WITH CHECK (' OPERATOR(pg_catalog.||) pg_catalog.pg_get_expr(p.polwithcheck, p.polrelid)
             OPERATOR(pg_catalog.||) ')')
    FROM pg_catalog.pg_policy p
   WHERE p.polrelid OPERATOR(pg_catalog.=) source
     AND NOT EXISTS (SELECT FROM pg_catalog.pg_policy s
                      WHERE s.polrelid OPERATOR(pg_catalog.=) target
                        AND s.polname OPERATOR(pg_catalog.=) p.polname)
   ORDER BY p.oid
$$;
COMMENT ON FUNCTION idem._policy_statements(regclass, regclass, text) IS
  'Internal (swap_partition): CREATE POLICY statements for the row-level security policies of source that target (named target_name) lacks, by name';

CREATE FUNCTION idem._comment_statements(source regclass, target regclass, target_name text)
  RETURNS SETOF text
  LANGUAGE sql STABLE STRICT PARALLEL SAFE SECURITY INVOKER
  SET search_path = pg_catalog, pg_temp
AS $$
  SELECT CASE WHEN d.objsubid OPERATOR(pg_catalog.=) 0 THEN 'COMMENT ON TABLE ' OPERATOR(pg_catalog.||) target_name
              ELSE 'COMMENT ON COLUMN ' OPERATOR(pg_catalog.||) target_name OPERATOR(pg_catalog.||) '.'
                   OPERATOR(pg_catalog.||) pg_catalog.quote_ident(a.attname) END
         OPERATOR(pg_catalog.||) ' IS ' OPERATOR(pg_catalog.||) pg_catalog.quote_literal(d.description)
    FROM pg_catalog.pg_description d
    LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) d.objoid
                                       AND a.attnum OPERATOR(pg_catalog.=) d.objsubid
   WHERE d.objoid OPERATOR(pg_catalog.=) source
     AND d.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
     -- A column comment only for a column the target has.
     AND (d.objsubid OPERATOR(pg_catalog.=) 0
          OR EXISTS (SELECT FROM pg_catalog.pg_attribute s
                      WHERE s.attrelid OPERATOR(pg_catalog.=) target
                        AND s.attname OPERATOR(pg_catalog.=) a.attname AND NOT s.attisdropped))
   ORDER BY d.objsubid
$$;
COMMENT ON FUNCTION idem._comment_statements(regclass, regclass, text) IS
  'Internal (swap_partition): COMMENT statements that give target (named target_name) the comments of source on the table and on the columns both have';

-- ---------------------------------------------------------------------------
-- merge and merge_query take exclude_columns (dbt's merge_exclude_columns):
-- the columns an update leaves alone. A new trailing parameter with a
-- default, so every call of the old signature, positional or named, means
-- what it meant. A parameter cannot be added in place: the old signature
-- goes, the new one comes with the same options, comment and (default)
-- privileges.
DROP FUNCTION idem.merge(regclass, regclass, text[], text, text, boolean, text, text[], boolean, boolean);
CREATE FUNCTION idem.merge(target regclass, source regclass,
                           key text[] DEFAULT NULL,
                           version_column text DEFAULT NULL,
                           delete_column text DEFAULT NULL,
                           delete_missing boolean DEFAULT false,
                           delete_scope text DEFAULT NULL,
                           columns text[] DEFAULT NULL,
                           allow_empty boolean DEFAULT false,
                           dry_run boolean DEFAULT false,
                           exclude_columns text[] DEFAULT NULL)
  RETURNS TABLE(inserted bigint, updated bigint, deleted bigint, unchanged bigint, stale bigint)
  AS 'MODULE_PATHNAME', 'idem_merge'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.merge(regclass, regclass, text[], text, text, boolean, text, text[], boolean, boolean, text[]) IS
  'Merges a source table or view into target on the business key: inserts new keys, updates changed rows, never touches unchanged ones; versions, deletes and tombstones';

DROP FUNCTION idem.merge_query(regclass, text, text[], text, text, boolean, text, text[], boolean, boolean);
CREATE FUNCTION idem.merge_query(target regclass, query text,
                                 key text[] DEFAULT NULL,
                                 version_column text DEFAULT NULL,
                                 delete_column text DEFAULT NULL,
                                 delete_missing boolean DEFAULT false,
                                 delete_scope text DEFAULT NULL,
                                 columns text[] DEFAULT NULL,
                                 allow_empty boolean DEFAULT false,
                                 dry_run boolean DEFAULT false,
                                 exclude_columns text[] DEFAULT NULL)
  RETURNS TABLE(inserted bigint, updated bigint, deleted bigint, unchanged bigint, stale bigint)
  AS 'MODULE_PATHNAME', 'idem_merge_query'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.merge_query(regclass, text, text[], text, text, boolean, text, text[], boolean, boolean, text[]) IS
  'idem.merge with the source given as a query (run once, as the caller, under the caller''s search_path)';

-- ---------------------------------------------------------------------------
-- merge's first load (into an empty target) and append are one INSERT ...
-- ON CONFLICT each; this counts, in its ON CONFLICT ... WHERE, the keys a
-- concurrent writer had inserted meanwhile: with the same content or
-- another, and returns whether to update the row (may_update and not same).
-- Backend-local counts, read by the function right after its statement;
-- calling it elsewhere changes nothing but the counts of a merge or append
-- into target in the same session.
CREATE FUNCTION idem._count_conflict(target regclass, same boolean, may_update boolean)
  RETURNS boolean
  AS 'MODULE_PATHNAME', 'idem__count_conflict'
  LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem._count_conflict(regclass, boolean, boolean) IS
  'Internal (merge, append): counts a conflict of an INSERT ... ON CONFLICT into target as the same row or another, and returns whether to update it';

-- The keys a batch may repeat, found in one pass (core/repeat_hashes.hpp):
-- merge and append group by key only the rows whose key hash comes back
-- (usually none) instead of the whole batch. _key_hash hashes a key's
-- columns with their types' hash functions (keys equal by the type's
-- equality hash alike); _repeat_hashes gives the hashes seen more than once,
-- or NULL when the batch is too large or repeats too many keys to tell.
-- Both run as the caller, on rows the caller reads; the aggregate's support
-- functions take internal and cannot be called alone.
CREATE FUNCTION idem._key_hash(VARIADIC "any") RETURNS bigint
  AS 'MODULE_PATHNAME', 'idem__key_hash'
  LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION idem._key_hash("any") IS
  'Internal: the 64-bit key hash idem._repeat_hashes and idem._key_repeats use, equal for keys equal by their types'' equality (for tests and diagnosis)';

CREATE FUNCTION idem._key_repeats(repeats bigint[], VARIADIC "any") RETURNS boolean
  AS 'MODULE_PATHNAME', 'idem__key_repeats'
  LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION idem._key_repeats(bigint[], "any") IS
  'Internal (merge, append): whether a key''s hash is among repeats (true for every key when repeats is NULL)';

CREATE FUNCTION idem._repeat_hashes_add(internal, VARIADIC "any") RETURNS internal
  AS 'MODULE_PATHNAME', 'idem__repeat_hashes_add'
  LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION idem._repeat_hashes_add(internal, "any") IS
  'Internal: transition function of idem._repeat_hashes (notes one key''s hash)';

CREATE FUNCTION idem._repeat_hashes_final(internal) RETURNS bigint[]
  AS 'MODULE_PATHNAME', 'idem__repeat_hashes_final'
  LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION idem._repeat_hashes_final(internal) IS
  'Internal: final function of idem._repeat_hashes (the hashes seen more than once, or NULL)';

CREATE AGGREGATE idem._repeat_hashes(VARIADIC "any") (
  SFUNC = idem._repeat_hashes_add,
  STYPE = internal,
  FINALFUNC = idem._repeat_hashes_final,
  FINALFUNC_MODIFY = READ_WRITE
);
COMMENT ON AGGREGATE idem._repeat_hashes(VARIADIC "any") IS
  'Internal (merge, append): the key hashes of a batch seen more than once, NULL when unknown';

-- One row's v1 hash, the one a checksum adds up, as a numeric (0 to
-- 2^128 - 1): the checksum of a Citus distributed table is
-- count(*) and sum(idem._row_hash(...)), which Citus computes per shard on
-- the workers; the coordinator adds the sums modulo 2^128. Runs as the
-- caller, on the columns the caller reads.
CREATE FUNCTION idem._row_hash(VARIADIC "any") RETURNS numeric
  AS 'MODULE_PATHNAME', 'idem__row_hash'
  LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION idem._row_hash("any") IS
  'Internal (checksum on Citus): one row''s v1 hash as a number, the digest being their sum modulo 2^128';

-- ---------------------------------------------------------------------------
-- Append-only event logs, keyed by the event's own id (docs/append.md).
CREATE FUNCTION idem.append(target regclass, source regclass,
                            key text[] DEFAULT NULL,
                            exclude_columns text[] DEFAULT NULL,
                            on_conflict text DEFAULT 'error',
                            within interval DEFAULT NULL)
  RETURNS TABLE(inserted bigint, duplicate bigint, conflicting bigint)
  AS 'MODULE_PATHNAME', 'idem_append'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.append(regclass, regclass, text[], text[], text, interval) IS
  'Appends the events of a source table or view to target once each, keyed by the event id: an event already there with the same content is a duplicate (counted, not written), with other content an error (ID005) or, with on_conflict => ''keep_first'', counted and left';

CREATE FUNCTION idem.append_query(target regclass, query text,
                                  key text[] DEFAULT NULL,
                                  exclude_columns text[] DEFAULT NULL,
                                  on_conflict text DEFAULT 'error',
                                  within interval DEFAULT NULL)
  RETURNS TABLE(inserted bigint, duplicate bigint, conflicting bigint)
  AS 'MODULE_PATHNAME', 'idem_append_query'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.append_query(regclass, text, text[], text[], text, interval) IS
  'idem.append with the events given as a query (run once, as the caller, under the caller''s search_path)';
