-- The extension installs cleanly, documents itself, and keeps its schema shut.
-- (pg_regress --load-extension=pg_idempotent created it.)

SELECT extname, extversion, extrelocatable, extnamespace::regnamespace
  FROM pg_extension WHERE extname = 'pg_idempotent';

-- Every object of the extension has a COMMENT.
SELECT pg_describe_object(d.classid, d.objid, d.objsubid) AS undocumented
  FROM pg_depend d
 WHERE d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_idempotent')
   AND d.deptype = 'e'
   -- A table's row type (and its array type) goes with the table: on 18 it
   -- is a member of its own; leave it out, so every major lists the same.
   AND NOT (d.classid = 'pg_type'::regclass AND EXISTS (
         SELECT FROM pg_type t LEFT JOIN pg_type e ON e.oid = t.typelem
          WHERE t.oid = d.objid AND (t.typrelid <> 0 OR e.typrelid <> 0)))
   AND obj_description(d.objid, (SELECT relname FROM pg_class WHERE oid = d.classid)::name) IS NULL
 ORDER BY 1;
SELECT count(*) > 0 AS has_schema_comment FROM pg_description
 WHERE objoid = 'idem'::regnamespace;

-- Functions that read user data run as the caller.
SELECT p.proname, p.prosecdef, p.provolatile, p.proisstrict
  FROM pg_proc p WHERE p.pronamespace = 'idem'::regnamespace ORDER BY 1;

-- Every SECURITY DEFINER function pins its search_path and is closed to
-- PUBLIC (they touch idem's state; a DBA grants them with idem.grant_usage).
SELECT p.proname, has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute,
       EXISTS (SELECT FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%') AS pinned_search_path
  FROM pg_proc p WHERE p.pronamespace = 'idem'::regnamespace AND p.prosecdef ORDER BY 1;
-- idem's state tables, the grants view and the sequences are closed to
-- PUBLIC (run_history shows each role its own runs).
SELECT c.relname, c.relkind, has_table_privilege('public', c.oid, 'SELECT') AS public_select,
       has_table_privilege('public', c.oid, 'INSERT,UPDATE,DELETE') AS public_write,
       CASE WHEN c.relkind = 'S' THEN has_sequence_privilege('public', c.oid, 'USAGE,UPDATE') END AS public_sequence
  FROM pg_class c WHERE c.relnamespace = 'idem'::regnamespace AND c.relkind IN ('r', 'v', 'S') ORDER BY 1;

-- PUBLIC may use the schema but not create in it; the boundary probe is not
-- for PUBLIC.
SELECT has_schema_privilege('public', 'idem', 'USAGE') AS public_usage,
       has_schema_privilege('public', 'idem', 'CREATE') AS public_create;
SELECT has_function_privilege('public', 'idem._boundary_probe(text, text)', 'EXECUTE') AS public_probe,
       has_function_privilege('public', 'idem.checksum(regclass, text[])', 'EXECUTE') AS public_checksum;

-- Not relocatable.
CREATE SCHEMA elsewhere;
ALTER EXTENSION pg_idempotent SET SCHEMA elsewhere;
DROP SCHEMA elsewhere;

-- DROP EXTENSION removes every object; the schema idem that CREATE EXTENSION
-- made is left empty (PostgreSQL does not make it a member), and a new
-- CREATE EXTENSION uses it again.
DROP EXTENSION pg_idempotent;
SELECT count(*) AS idem_schemas FROM pg_namespace WHERE nspname = 'idem';
SELECT count(*) AS objects_left FROM pg_proc WHERE pronamespace = 'idem'::regnamespace;
CREATE EXTENSION pg_idempotent;

-- A schema idem that someone else prepared is refused: its owner could have
-- planted objects that the extension's own SQL would then call.
DROP EXTENSION pg_idempotent;
DROP SCHEMA idem;
CREATE ROLE idem_squatter;
CREATE SCHEMA idem AUTHORIZATION idem_squatter;
-- (Without CONTEXT: from 17 on it also quotes the script's statement.)
\set SHOW_CONTEXT never
CREATE EXTENSION pg_idempotent;
\set SHOW_CONTEXT errors
DROP SCHEMA idem;
DROP ROLE idem_squatter;
CREATE EXTENSION pg_idempotent;
SELECT count(*) AS idem_functions FROM pg_proc WHERE pronamespace = 'idem'::regnamespace;

-- Every state table has a replica identity (usage_grants: FULL), so a
-- FOR ALL TABLES publication does not stop revoke_usage (55000 otherwise).
SELECT c.relname AS without_replica_identity FROM pg_class c
 WHERE c.relnamespace = 'idem'::regnamespace AND c.relkind = 'r'
   AND (c.relreplident = 'n'
        OR (c.relreplident = 'd' AND NOT EXISTS (SELECT FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)));
SET client_min_messages = error;  -- CREATE PUBLICATION warns about wal_level
CREATE PUBLICATION idem_everything FOR ALL TABLES;
RESET client_min_messages;
CREATE ROLE ext_published_role;
SELECT idem.grant_usage('ext_published_role', 'reports');
SELECT idem.revoke_usage('ext_published_role', 'reports');
SELECT count(*) AS grants_left FROM idem.usage_grants WHERE role::text = 'ext_published_role';
DROP PUBLICATION idem_everything;
DROP ROLE ext_published_role;
