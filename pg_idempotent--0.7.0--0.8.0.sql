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

-- ---------------------------------------------------------------------------
-- History tables (slowly changing dimensions, type 2; dbt's snapshots):
-- docs/snapshot.md. One current version per key is enforced by a partial
-- unique index that snapshot_prepare creates and snapshot requires.
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
                              valid_to_current text DEFAULT NULL)
  RETURNS TABLE(inserted bigint, changed bigint, deleted bigint, unchanged bigint, stale bigint)
  AS 'MODULE_PATHNAME', 'idem_snapshot'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.snapshot(regclass, regclass, text[], text, text, text[], text[], text, text, text, timestamptz, boolean, text, text) IS
  'Keeps target as the history (SCD type 2) of a source table or view on key: opens a version for every new or changed key, closes the version a change (or, with hard_deletes => ''invalidate'' or ''new_record'', a deletion) ends; a rerun writes nothing';

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
                              valid_to_current text DEFAULT NULL)
  RETURNS TABLE(inserted bigint, changed bigint, deleted bigint, unchanged bigint, stale bigint)
  AS 'MODULE_PATHNAME', 'idem_snapshot_query'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.snapshot_query(regclass, text, text[], text, text, text[], text[], text, text, text, timestamptz, boolean, text, text) IS
  'idem.snapshot with the source given as a query (run once, as the caller, under the caller''s search_path)';

CREATE FUNCTION idem.snapshot_prepare(target regclass, key text[], valid_to text DEFAULT 'valid_to',
                                      valid_to_current text DEFAULT NULL)
  RETURNS text AS 'MODULE_PATHNAME', 'idem_snapshot_prepare'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.snapshot_prepare(regclass, text[], text, text) IS
  'Creates, once, the partial unique index that allows one current version (valid_to NULL, or valid_to_current) per key in a snapshot target; returns its name';

-- ---------------------------------------------------------------------------
-- Fencing tokens for leased keys (docs/keys.md, Fencing). A leased claim and
-- every takeover draw a token from one sequence: it never goes back (a
-- sequence is WAL-logged ahead of the values it hands out, so neither a
-- crash nor a promoted standby repeats one, and pg_dump keeps its value: it
-- is extension configuration) and is never reused for a key, also after
-- forget deletes the key's row. save_point, complete and check_lease given a
-- token refuse (ID004) when the key's current token is another.
CREATE SEQUENCE idem.key_tokens;
REVOKE ALL ON SEQUENCE idem.key_tokens FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('idem.key_tokens', '');
COMMENT ON SEQUENCE idem.key_tokens IS
  'Fencing tokens of leased keys: drawn by every leased claim and every takeover, never reused';

ALTER TABLE idem.keys ADD COLUMN token bigint;
COMMENT ON COLUMN idem.keys.token IS
  'The fencing token of the key''s current owner: drawn by a leased claim or a takeover; NULL for a key claimed without a lease';
-- Keys under a lease at the upgrade get a token, so that check_lease and
-- key_status show one; their workers hold none and go on as before.
UPDATE idem.keys k SET token = pg_catalog.nextval('idem.key_tokens'::pg_catalog.regclass)
 WHERE k.state OPERATOR(pg_catalog.=) 'in_progress';

-- idem.keys is keyed by (scope, key) with the key itself, no longer by
-- (scope, md5(key)::uuid): a hash scatters consecutive inserts over the whole
-- index and made every row carry the key twice, a quarter of a claim's
-- throughput (bench/README.md, keys). Keys longer than 512 bytes (too long
-- for a btree entry in general), and keys that start with U+0001, are
-- stored as U+0001 || md5(key) in key, the key itself in long_key; a key
-- stored inline never starts with U+0001, so the two kinds never meet. The
-- "C" collation: keys are compared byte for byte, and sorting them needs no
-- locale.
ALTER TABLE idem.keys DROP CONSTRAINT keys_pkey;
ALTER TABLE idem.keys ADD COLUMN long_key text;
COMMENT ON COLUMN idem.keys.long_key IS
  'The key, when it is longer than 512 bytes or starts with U+0001 (key then holds U+0001 || md5 of it); NULL otherwise';
UPDATE idem.keys k SET long_key = k.key,
       key = pg_catalog.chr(1) OPERATOR(pg_catalog.||) pg_catalog.md5(k.key)
 WHERE pg_catalog.octet_length(k.key) OPERATOR(pg_catalog.>) 512
    OR pg_catalog.left(k.key, 1) OPERATOR(pg_catalog.=) pg_catalog.chr(1);
ALTER TABLE idem.keys DROP COLUMN key_hash;
ALTER TABLE idem.keys ALTER COLUMN key TYPE text COLLATE pg_catalog."C";
ALTER TABLE idem.keys ADD CONSTRAINT keys_pkey PRIMARY KEY (scope, key);
COMMENT ON COLUMN idem.keys.key IS
  'The key, or U+0001 || md5(key) for a key in long_key; with scope, the primary key';

CREATE FUNCTION idem.claim_lease(key text, scope text, lease interval, fingerprint text DEFAULT NULL,
                                 wait boolean DEFAULT true)
  RETURNS bigint AS 'MODULE_PATHNAME', 'idem_claim_lease'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.claim_lease(text, text, interval, text, boolean) IS
  'Claims a key under a lease and returns its fencing token (NULL when the key is done; 55P03 while another lease is live); pass the token to save_point, complete and check_lease';

-- complete and save_point take the token as a last, optional argument:
-- every existing call (positional or named) means what it meant.
DROP FUNCTION idem.complete(text, jsonb, text);
CREATE FUNCTION idem.complete(key text, result jsonb DEFAULT NULL, scope text DEFAULT 'default',
                              token bigint DEFAULT NULL)
  RETURNS void AS 'MODULE_PATHNAME', 'idem_complete'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.complete(text, jsonb, text, bigint) IS
  'Marks a claimed key done and stores its result; with a token, only while that token owns the key (ID004 otherwise)';

DROP FUNCTION idem.save_point(text, text, text);
CREATE FUNCTION idem.save_point(key text, recovery_point text, scope text DEFAULT 'default',
                                token bigint DEFAULT NULL)
  RETURNS void AS 'MODULE_PATHNAME', 'idem_save_point'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.save_point(text, text, text, bigint) IS
  'Records the progress of a leased key and renews its lease; with a token, only while that token owns the key (ID004 otherwise)';

CREATE FUNCTION idem.check_lease(key text, scope text, token bigint)
  RETURNS void AS 'MODULE_PATHNAME', 'idem_check_lease'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.check_lease(text, text, bigint) IS
  'Raises ID004 unless the token still owns the key (in progress, not taken over); locks the key''s row until the transaction ends, so no takeover commits before it';

DROP FUNCTION idem.key_status(text, text);
CREATE FUNCTION idem.key_status(key text, scope text DEFAULT 'default')
  RETURNS TABLE(state text, fingerprint text, result jsonb, recovery_point text,
                claimed_at timestamptz, completed_at timestamptz, lease_until timestamptz, token bigint)
  AS 'MODULE_PATHNAME', 'idem_key_status'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1;
COMMENT ON FUNCTION idem.key_status(text, text) IS
  'The state of a key: in_progress, expired (a lease ran out), or done, and its fencing token; no row if never claimed';

-- ---------------------------------------------------------------------------
-- Grants of dropped roles. A grant names its role as regrole: an OID in the
-- table, so a renamed role keeps its grants and a new role of a dropped
-- role's name inherits nothing, and a name in pg_dump's output and in
-- logical replication, where OIDs mean nothing (another cluster resolves the
-- name). The rows live in idem.usage_grant_rows; idem.usage_grants is now a
-- view that hides the grants of dropped roles, pg_dump leaves them out, and
-- idem.purge_grants() deletes them (grant_usage and revoke_usage do it
-- whenever they write): a dropped role's OID could one day be another's.
ALTER TABLE idem.usage_grants RENAME TO usage_grant_rows;
ALTER INDEX idem.usage_grants_role_kind_scope RENAME TO usage_grant_rows_role_kind_scope;
SELECT pg_catalog.pg_extension_config_dump('idem.usage_grant_rows',
  'WHERE EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) role::pg_catalog.oid)');
COMMENT ON TABLE idem.usage_grant_rows IS
  'Roles allowed to use idem''s state (role by OID, as regrole): keys of a scope, the checkpoints of a job or a dataset (kind and scope), or every scope of every kind (both NULL); read it through idem.usage_grants';

CREATE VIEW idem.usage_grants AS
  SELECT g.role, g.scope, g.granted_at, g.kind
    FROM idem.usage_grant_rows g
   WHERE EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) g.role::pg_catalog.oid);
REVOKE ALL ON idem.usage_grants FROM PUBLIC;
COMMENT ON VIEW idem.usage_grants IS
  'The grants of existing roles, by name: who may use idem''s keys, checkpoints and datasets (grants of dropped roles are hidden; idem.purge_grants deletes them)';

CREATE FUNCTION idem._purge_dropped_role_grants() RETURNS bigint
  LANGUAGE sql VOLATILE
  SET search_path = pg_catalog, pg_temp
AS $$
  WITH gone AS (
    DELETE FROM idem.usage_grant_rows g
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) g.role::pg_catalog.oid)
    RETURNING 1)
  SELECT pg_catalog.count(*) FROM gone
$$;
REVOKE ALL ON FUNCTION idem._purge_dropped_role_grants() FROM PUBLIC;
COMMENT ON FUNCTION idem._purge_dropped_role_grants() IS
  'Internal: deletes the grants of roles that no longer exist; returns how many';

CREATE FUNCTION idem.purge_grants() RETURNS bigint
  LANGUAGE sql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$ SELECT idem._purge_dropped_role_grants() $$;
REVOKE ALL ON FUNCTION idem.purge_grants() FROM PUBLIC;
COMMENT ON FUNCTION idem.purge_grants() IS
  'Deletes the grants of dropped roles from idem''s grant table; returns how many (grant_usage and revoke_usage do it too)';

CREATE OR REPLACE FUNCTION idem.grant_usage(role regrole, scope text DEFAULT NULL) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
  IF role IS NULL THEN
    RAISE EXCEPTION 'role must not be NULL' USING ERRCODE = '22004',
      HINT = 'Name the role that may use the scope: idem.grant_usage(''etl'', ''payments'', ''keys'').';
  END IF;
  IF scope IS NULL THEN
    RAISE WARNING 'role % may now use every scope: every role''s keys and results, checkpoints and datasets', role
      USING DETAIL = 'The every-scope grant is an administrator''s grant: the role can read other roles'' stored results, pre-claim their keys, rewind their jobs and pin their datasets.',
            HINT = 'Grant pipeline roles the scopes they use: idem.grant_usage(role, scope, kind).';
    PERFORM idem._purge_dropped_role_grants();
    INSERT INTO idem.usage_grant_rows (role, scope, kind) VALUES (grant_usage.role, NULL, NULL)
      ON CONFLICT DO NOTHING;
    RETURN;
  END IF;
  RAISE NOTICE 'grant_usage(role, scope) grants % for keys and checkpoints, and as a dataset name', pg_catalog.quote_literal(scope)
    USING HINT = 'Name what you grant: idem.grant_usage(role, scope, ''keys''), (role, job, ''checkpoints'') or (role, ''schema.view'', ''dataset'').';
  PERFORM idem.grant_usage(grant_usage.role, grant_usage.scope, k)
     FROM (VALUES ('keys'), ('checkpoints')) AS v(k);
  -- A dataset as 0.6.0 named it: schema.view as written.
  INSERT INTO idem.usage_grant_rows (role, scope, kind)
  SELECT grant_usage.role, idem._dataset_scope(grant_usage.scope, true), 'dataset'
   WHERE idem._dataset_scope(grant_usage.scope, true) IS NOT NULL
  ON CONFLICT DO NOTHING;
END
$$;

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
  IF kind OPERATOR(pg_catalog.<>) ALL (ARRAY['keys', 'checkpoints', 'dataset']) THEN
    RAISE EXCEPTION 'kind must be ''keys'', ''checkpoints'' or ''dataset'', not %', pg_catalog.quote_literal(kind)
      USING ERRCODE = '22023',
      HINT = 'keys: idempotency keys of the scope; checkpoints: the job named by the scope; dataset: the schema.view named by the scope.';
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

CREATE OR REPLACE FUNCTION idem.revoke_usage(role regrole, scope text DEFAULT NULL) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF role IS NULL THEN
    RAISE EXCEPTION 'role must not be NULL' USING ERRCODE = '22004',
      HINT = 'Name the role whose grants to take back; idem.usage_grants lists them.';
  END IF;
  PERFORM idem._purge_dropped_role_grants();
  DELETE FROM idem.usage_grant_rows g
   WHERE g.role OPERATOR(pg_catalog.=) revoke_usage.role
     AND (CASE WHEN revoke_usage.scope IS NULL THEN g.scope IS NULL
               ELSE g.scope OPERATOR(pg_catalog.=) revoke_usage.scope
                    OR (g.kind OPERATOR(pg_catalog.=) 'dataset'
                        AND g.scope OPERATOR(pg_catalog.=) idem._dataset_scope(revoke_usage.scope, true)) END);
END
$$;

CREATE OR REPLACE FUNCTION idem.revoke_usage(role regrole, scope text, kind text) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF role IS NULL OR scope IS NULL OR kind IS NULL THEN
    RAISE EXCEPTION 'role, scope and kind must not be NULL' USING ERRCODE = '22004',
      HINT = 'Pass the three as idem.grant_usage took them; idem.usage_grants lists them.';
  END IF;
  PERFORM idem._purge_dropped_role_grants();
  DELETE FROM idem.usage_grant_rows g
   WHERE g.role OPERATOR(pg_catalog.=) revoke_usage.role
     AND g.kind OPERATOR(pg_catalog.=) revoke_usage.kind
     AND g.scope OPERATOR(pg_catalog.=) CASE WHEN revoke_usage.kind OPERATOR(pg_catalog.=) 'dataset'
                                              THEN idem._dataset_scope(revoke_usage.scope)
                                              ELSE revoke_usage.scope END;
END
$$;

-- Every statement that writes the grant table tells every backend (a
-- relcache invalidation at commit), so each keeps its grant decisions
-- across transactions and drops them the moment a grant changes: a claim
-- per transaction costs no grant query (docs/keys.md, Privileges).
CREATE FUNCTION idem._grants_changed() RETURNS trigger
  AS 'MODULE_PATHNAME', 'idem__grants_changed'
  LANGUAGE C VOLATILE;
COMMENT ON FUNCTION idem._grants_changed() IS
  'Internal: the trigger on idem.usage_grant_rows that makes every backend forget its cached grant decisions';
CREATE TRIGGER usage_grant_rows_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON idem.usage_grant_rows
  FOR EACH STATEMENT EXECUTE FUNCTION idem._grants_changed();

-- ---------------------------------------------------------------------------
-- One word for waiting (issue 26): claim and claim_lease say wait, so
-- lock_job does too. Its nowait (0.1.0) still works for this release, by
-- name or by position, with a NOTICE; both given and contradicting is 22023.
-- A NULL means "not given" (0.7.0 raised 22004 for a NULL nowait).
DROP FUNCTION idem.lock_job(text, boolean);
CREATE FUNCTION idem.lock_job(job text, nowait boolean DEFAULT NULL, wait boolean DEFAULT NULL) RETURNS text
  AS 'MODULE_PATHNAME', 'idem_lock_job'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.lock_job(text, boolean, boolean) IS
  'Holds the job for the rest of the transaction and returns its watermark; concurrent runners queue, or with wait => false get 55P03 at once (nowait is the deprecated spelling of wait => false)';
