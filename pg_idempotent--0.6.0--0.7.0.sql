-- pg_idempotent 0.6.0 -> 0.7.0: the security release (SECURITY.md).
-- (A fresh CREATE EXTENSION runs 0.1.0, then each upgrade script, then this.)
\echo Use "ALTER EXTENSION pg_idempotent UPDATE TO '0.7.0'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Grants name their kind. A grant for scope 'a.b' used to cover the keys of
-- scope 'a.b', the job 'a.b' and the dataset a.b alike, and a dataset grant
-- 'a.x.y' matched both "a"."x.y" and "a.x".y. Now each row says what it
-- grants: keys (a scope), checkpoints (a job) or a dataset, named by its
-- quoted, schema-qualified name. The every-scope grant (scope NULL) has no
-- kind.
ALTER TABLE idem.usage_grants ADD COLUMN kind text;

-- An old grant of a scope keeps exactly what it gave: the keys and the job of
-- that name, and the dataset when the name reads as schema.view. 0.6.0
-- matched a dataset grant against schema || '.' || view as written, so an old
-- name is split at its one dot, without the parser's case folding ("legacy");
-- a new one is read as the parser reads it.
CREATE FUNCTION idem._dataset_scope(name text, legacy boolean DEFAULT false) RETURNS text
  LANGUAGE plpgsql IMMUTABLE STRICT
  SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  parts text[];
BEGIN
  IF legacy THEN
    parts := pg_catalog.string_to_array(name, '.');
  ELSE
    BEGIN
      parts := pg_catalog.parse_ident(name);
    EXCEPTION WHEN OTHERS THEN
      RETURN NULL;
    END;
  END IF;
  IF pg_catalog.array_length(parts, 1) OPERATOR(pg_catalog.<>) 2
     OR parts[1] OPERATOR(pg_catalog.=) '' OR parts[2] OPERATOR(pg_catalog.=) '' THEN
    RETURN NULL;
  END IF;
  RETURN pg_catalog.quote_ident(parts[1]) OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||)
         pg_catalog.quote_ident(parts[2]);
END
$$;
COMMENT ON FUNCTION idem._dataset_scope(text, boolean) IS
  'Internal: a dataset name (schema.view, read as the parser reads it, or split at its one dot as 0.6.0 matched it) as grants store it: "schema"."view" quoted only where needed; NULL when it is not two names';

DROP INDEX idem.usage_grants_role_scope;
INSERT INTO idem.usage_grants (role, scope, kind, granted_at)
SELECT g.role, g.scope, k.kind, g.granted_at
  FROM idem.usage_grants g CROSS JOIN (VALUES ('keys'), ('checkpoints')) AS k(kind)
 WHERE g.scope IS NOT NULL
UNION ALL
SELECT g.role, idem._dataset_scope(g.scope, true), 'dataset', g.granted_at
  FROM idem.usage_grants g
 WHERE g.scope IS NOT NULL AND idem._dataset_scope(g.scope, true) IS NOT NULL;
DELETE FROM idem.usage_grants g WHERE g.scope IS NOT NULL AND g.kind IS NULL;
CREATE UNIQUE INDEX usage_grants_role_kind_scope
  ON idem.usage_grants (role, (COALESCE(kind, '')), (COALESCE(scope, '')));
ALTER TABLE idem.usage_grants
  ADD CONSTRAINT usage_grants_kind CHECK (kind IN ('keys', 'checkpoints', 'dataset')),
  ADD CONSTRAINT usage_grants_kind_with_scope CHECK ((kind IS NULL) = (scope IS NULL));
COMMENT ON TABLE idem.usage_grants IS
  'Roles allowed to use idem''s state: keys of a scope, the checkpoints of a job or a dataset (kind and scope), or every scope of every kind (both NULL)';

-- The one-grant form of 0.6.0 still works for a release: every scope with a
-- WARNING (it opens every other role's state), one scope for all three kinds
-- with a NOTICE that names the three-argument form.
CREATE OR REPLACE FUNCTION idem.grant_usage(role regrole, scope text DEFAULT NULL) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
  IF role IS NULL THEN
    RAISE EXCEPTION 'role must not be NULL' USING ERRCODE = '22004';
  END IF;
  IF scope IS NULL THEN
    RAISE WARNING 'role % may now use every scope: every role''s keys and results, checkpoints and datasets', role
      USING DETAIL = 'The every-scope grant is an administrator''s grant: the role can read other roles'' stored results, pre-claim their keys, rewind their jobs and pin their datasets.',
            HINT = 'Grant pipeline roles the scopes they use: idem.grant_usage(role, scope, kind).';
    INSERT INTO idem.usage_grants (role, scope, kind) VALUES (grant_usage.role, NULL, NULL)
      ON CONFLICT DO NOTHING;
    RETURN;
  END IF;
  RAISE NOTICE 'grant_usage(role, scope) grants % for keys and checkpoints, and as a dataset name', pg_catalog.quote_literal(scope)
    USING HINT = 'Name what you grant: idem.grant_usage(role, scope, ''keys''), (role, job, ''checkpoints'') or (role, ''schema.view'', ''dataset'').';
  PERFORM idem.grant_usage(grant_usage.role, grant_usage.scope, k)
     FROM (VALUES ('keys'), ('checkpoints')) AS v(k);
  -- A dataset as 0.6.0 named it: schema.view as written.
  INSERT INTO idem.usage_grants (role, scope, kind)
  SELECT grant_usage.role, idem._dataset_scope(grant_usage.scope, true), 'dataset'
   WHERE idem._dataset_scope(grant_usage.scope, true) IS NOT NULL
  ON CONFLICT DO NOTHING;
END
$$;
COMMENT ON FUNCTION idem.grant_usage(regrole, text) IS
  'Deprecated form: without a scope, lets a role use every scope of every kind (an administrator''s grant, with a WARNING); with one, grants it for keys, checkpoints and as a dataset name';

CREATE FUNCTION idem.grant_usage(role regrole, scope text, kind text) RETURNS void
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
      USING ERRCODE = '22023';
  END IF;
  IF scope OPERATOR(pg_catalog.=) '' THEN
    RAISE EXCEPTION 'scope must not be empty' USING ERRCODE = '22023';
  END IF;
  IF kind OPERATOR(pg_catalog.=) 'dataset' THEN
    stored := idem._dataset_scope(scope);
    IF stored IS NULL THEN
      RAISE EXCEPTION 'dataset % is not a schema-qualified view name', pg_catalog.quote_literal(scope)
        USING ERRCODE = '42602', HINT = 'Name it as schema.view, quoted as in SQL: ''sales."Daily"''.';
    END IF;
  END IF;
  INSERT INTO idem.usage_grants (role, scope, kind) VALUES (grant_usage.role, stored, grant_usage.kind)
    ON CONFLICT DO NOTHING;
END
$$;
REVOKE ALL ON FUNCTION idem.grant_usage(regrole, text, text) FROM PUBLIC;
COMMENT ON FUNCTION idem.grant_usage(regrole, text, text) IS
  'Lets a role use one scope of one kind: the idempotency keys of a scope (''keys''), the checkpoints of a job (''checkpoints'') or a dataset (''dataset'', named schema.view)';

CREATE OR REPLACE FUNCTION idem.revoke_usage(role regrole, scope text DEFAULT NULL) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF role IS NULL THEN
    RAISE EXCEPTION 'role must not be NULL' USING ERRCODE = '22004';
  END IF;
  DELETE FROM idem.usage_grants g
   WHERE g.role OPERATOR(pg_catalog.=) revoke_usage.role
     AND (CASE WHEN revoke_usage.scope IS NULL THEN g.scope IS NULL
               ELSE g.scope OPERATOR(pg_catalog.=) revoke_usage.scope
                    OR (g.kind OPERATOR(pg_catalog.=) 'dataset'
                        AND g.scope OPERATOR(pg_catalog.=) idem._dataset_scope(revoke_usage.scope, true)) END);
END
$$;
COMMENT ON FUNCTION idem.revoke_usage(regrole, text) IS
  'Takes back a role''s grants of one scope (every kind), or its every-scope grant when scope is NULL';

CREATE FUNCTION idem.revoke_usage(role regrole, scope text, kind text) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF role IS NULL OR scope IS NULL OR kind IS NULL THEN
    RAISE EXCEPTION 'role, scope and kind must not be NULL' USING ERRCODE = '22004';
  END IF;
  DELETE FROM idem.usage_grants g
   WHERE g.role OPERATOR(pg_catalog.=) revoke_usage.role
     AND g.kind OPERATOR(pg_catalog.=) revoke_usage.kind
     AND g.scope OPERATOR(pg_catalog.=) CASE WHEN revoke_usage.kind OPERATOR(pg_catalog.=) 'dataset'
                                              THEN idem._dataset_scope(revoke_usage.scope)
                                              ELSE revoke_usage.scope END;
END
$$;
REVOKE ALL ON FUNCTION idem.revoke_usage(regrole, text, text) FROM PUBLIC;
COMMENT ON FUNCTION idem.revoke_usage(regrole, text, text) IS
  'Takes back what idem.grant_usage(role, scope, kind) gave';

-- ---------------------------------------------------------------------------
-- Tombstones are reached through the table they belong to: reading them needs
-- SELECT on the target, recording and purging them DELETE (checked by the
-- functions, as the caller, before the extension owner touches the state).
-- Before, any role with any usage grant could plant, read or purge the
-- tombstones of every table.
CREATE OR REPLACE FUNCTION idem._tombstones(target regclass)
  RETURNS TABLE(key_digest uuid, version text)
  AS 'MODULE_PATHNAME', 'idem__tombstones'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
CREATE OR REPLACE FUNCTION idem._tombstones_put(target regclass, key_digests uuid[], key_data jsonb[], versions text[])
  RETURNS bigint
  AS 'MODULE_PATHNAME', 'idem__tombstones_put'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
CREATE OR REPLACE FUNCTION idem.purge_tombstones(target regclass, older_than interval)
  RETURNS bigint
  AS 'MODULE_PATHNAME', 'idem_purge_tombstones'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
GRANT EXECUTE ON FUNCTION idem._tombstones(regclass) TO PUBLIC;
GRANT EXECUTE ON FUNCTION idem._tombstones_put(regclass, uuid[], jsonb[], text[]) TO PUBLIC;
GRANT EXECUTE ON FUNCTION idem.purge_tombstones(regclass, interval) TO PUBLIC;
COMMENT ON FUNCTION idem._tombstones(regclass) IS
  'Internal: the tombstones of a merge target (versions in canonical text); needs SELECT on the target';
COMMENT ON FUNCTION idem._tombstones_put(regclass, uuid[], jsonb[], text[]) IS
  'Internal: records versioned deletes of a merge target; needs DELETE on the target';
COMMENT ON FUNCTION idem.purge_tombstones(regclass, interval) IS
  'Deletes the tombstones of a merge target older than the given age; returns how many (needs DELETE on the target)';

-- ---------------------------------------------------------------------------
-- Checkpoints keep their values as a type no other role controls: a domain's
-- base type (its CHECK ran for the writer; a reader must not run it).
-- (A domain over a domain: as deep as they go.)
DO $$
BEGIN
  WHILE EXISTS (SELECT FROM idem.checkpoints c JOIN pg_catalog.pg_type t
                  ON t.oid OPERATOR(pg_catalog.=) c.value_type::pg_catalog.oid
                 WHERE t.typtype OPERATOR(pg_catalog.=) 'd') LOOP
    UPDATE idem.checkpoints c SET value_type = t.typbasetype::pg_catalog.regtype
      FROM pg_catalog.pg_type t
     WHERE t.oid OPERATOR(pg_catalog.=) c.value_type::pg_catalog.oid AND t.typtype OPERATOR(pg_catalog.=) 'd';
  END LOOP;
END
$$;

-- ---------------------------------------------------------------------------
-- A dataset remembers the view publish made (or a DBA adopted) and its
-- registered owner, who owns every version table. publish refuses a view of
-- that name that it did not make: one made by any role with CREATE on the
-- schema would otherwise receive the version tables. Existing datasets keep
-- the view they have now, and its owner.
ALTER TABLE idem.datasets ADD COLUMN view_relid regclass, ADD COLUMN owner regrole;
UPDATE idem.datasets d
   SET view_relid = c.oid::pg_catalog.regclass, owner = c.relowner::pg_catalog.regrole
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
 WHERE n.nspname OPERATOR(pg_catalog.=) d.schema_name AND c.relname OPERATOR(pg_catalog.=) d.view_name
   AND c.relkind OPERATOR(pg_catalog.=) 'v';
COMMENT ON COLUMN idem.datasets.view_relid IS
  'The view publish created (or idem.adopt took over); publish refuses another view of that name';
COMMENT ON COLUMN idem.datasets.owner IS
  'The registered owner: the role that first published the dataset, or the adopted view''s owner; every version table is its';

CREATE FUNCTION idem.adopt(dataset text) RETURNS void
  AS 'MODULE_PATHNAME', 'idem_adopt'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.adopt(text) IS
  'Lets publish replace an existing view that it did not create: the view''s owner (who must be the caller, or one of its roles) becomes the dataset''s registered owner';

-- ---------------------------------------------------------------------------
-- The run history knows each run's role by OID: a role created later under a
-- dropped role's name does not see (or purge) that role's runs. Existing rows
-- take the OID of the role that has their name now.
ALTER TABLE idem.run_log ADD COLUMN role regrole;
UPDATE idem.run_log l SET role = r.oid::pg_catalog.regrole
  FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) l.role_name;
COMMENT ON COLUMN idem.run_log.role IS
  'The role that ran it (current_user), by OID; role_name is its name at the time';
CREATE OR REPLACE VIEW idem.run_history WITH (security_barrier) AS
SELECT l.id, l.started_at, l.started_at OPERATOR(pg_catalog.+) l.duration AS finished_at, l.duration,
       l.function_name, l.target, l.unit, l.action, l.counts, l.rows_written, l.transaction_id,
       l.role_name, l.session_role, l.application_name, l.backend_pid
  FROM idem.run_log l
 WHERE pg_catalog.pg_has_role(l.role::pg_catalog.oid, 'MEMBER')
    OR (SELECT r.rolsuper FROM pg_catalog.pg_roles r
         WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER);

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
