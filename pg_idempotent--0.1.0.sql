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
