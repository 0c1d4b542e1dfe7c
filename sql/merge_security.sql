-- merge runs as the caller: privileges, row-level security and the caller's
-- search_path for caller SQL; its own SQL is immune to planted objects.
CREATE TABLE s_target (id int PRIMARY KEY, owner_name text, v int);
INSERT INTO s_target VALUES (1, 'alice', 1), (2, 'bob', 2);
CREATE ROLE s_inserter;
CREATE ROLE s_writer;
GRANT SELECT, INSERT ON s_target TO s_inserter;
GRANT SELECT, INSERT, UPDATE ON s_target TO s_writer;

-- A role without UPDATE cannot update through merge. Like INSERT ... ON
-- CONFLICT DO UPDATE, a merge needs SELECT, INSERT and UPDATE on the target
-- whatever the batch holds (and DELETE for delete_column/delete_missing).
SET ROLE s_inserter;
SELECT show_error($$SELECT * FROM idem.merge_query('s_target', 'SELECT 1 AS id, ''alice'' AS owner_name, 100 AS v')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('s_target', 'SELECT 3 AS id, ''carol'' AS owner_name, 3 AS v')$$);
-- Without DELETE, delete_missing is refused by PostgreSQL itself.
SELECT show_error($$SELECT * FROM idem.merge_query('s_target', 'SELECT 1 AS id, ''alice'' AS owner_name, 1 AS v', delete_missing => true)$$);
RESET ROLE;
SELECT * FROM s_target ORDER BY id;

-- Row-level security: the writer may only update alice's rows.
ALTER TABLE s_target ENABLE ROW LEVEL SECURITY;
CREATE POLICY s_read ON s_target FOR SELECT USING (true);
CREATE POLICY s_ins ON s_target FOR INSERT WITH CHECK (owner_name = 'alice');
CREATE POLICY s_upd ON s_target FOR UPDATE USING (owner_name = 'alice') WITH CHECK (owner_name = 'alice');
SET ROLE s_writer;
SELECT * FROM idem.merge_query('s_target', $$SELECT 1 AS id, 'alice' AS owner_name, 10 AS v$$);
-- bob's row is invisible to the UPDATE policy: not updated, exactly as a
-- hand-written UPDATE would skip it (the counts then cover fewer keys).
SELECT * FROM idem.merge_query('s_target', $$SELECT 2 AS id, 'bob' AS owner_name, 20 AS v$$);
SELECT show_error($$SELECT * FROM idem.merge_query('s_target', 'SELECT 4 AS id, ''mallory'' AS owner_name, 4 AS v')$$);
RESET ROLE;
SELECT * FROM s_target ORDER BY id;
ALTER TABLE s_target DISABLE ROW LEVEL SECURITY;

-- Hostile identifiers: quotes, spaces, upper case, a semicolon, in the
-- target, the source and every column, including the key.
CREATE SCHEMA "My Schema";
CREATE TABLE "My Schema"."Target; DROP TABLE s_target; --" (
  "Key ""K""" int PRIMARY KEY, "Value Col" text, "SELECT" int, "v;1" timestamptz NOT NULL);
CREATE TABLE "My Schema"."Src ""1""" ("Key ""K""" int, "Value Col" text, "SELECT" int, "v;1" timestamptz, "Del?" boolean);
INSERT INTO "My Schema"."Src ""1""" VALUES (1, 'a', 1, '2024-01-01', false), (2, 'b', 2, '2024-01-01', false);
SELECT * FROM idem.merge('"My Schema"."Target; DROP TABLE s_target; --"', '"My Schema"."Src ""1"""',
                         key => ARRAY['Key "K"'], version_column => 'v;1', delete_column => 'Del?');
UPDATE "My Schema"."Src ""1""" SET "Del?" = true, "v;1" = '2024-02-01' WHERE "Key ""K""" = 2;
SELECT * FROM idem.merge('"My Schema"."Target; DROP TABLE s_target; --"', '"My Schema"."Src ""1"""',
                         key => ARRAY['Key "K"'], version_column => 'v;1', delete_column => 'Del?',
                         columns => ARRAY['Value Col', 'SELECT']);
SELECT * FROM "My Schema"."Target; DROP TABLE s_target; --";
SELECT key_data FROM idem.tombstones WHERE target = '"My Schema"."Target; DROP TABLE s_target; --"'::regclass;
SELECT count(*) AS s_target_still_there FROM s_target;
SELECT show_error($$SELECT * FROM idem.merge('s_target', 's_target', key => ARRAY['id); DROP TABLE s_target; --'])$$);

-- A hostile search_path: a schema ahead of pg_catalog plants =, <, >, +, -
-- and the functions the merge statement calls. Nothing changes.
CREATE SCHEMA evil;
CREATE FUNCTION evil.no(int, int) RETURNS boolean LANGUAGE sql AS 'SELECT false';
CREATE FUNCTION evil.yes(int, int) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR evil.= (LEFTARG = int, RIGHTARG = int, FUNCTION = evil.yes);
CREATE OPERATOR evil.> (LEFTARG = bigint, RIGHTARG = int, FUNCTION = int84gt);  -- harmless twin
CREATE FUNCTION evil.uuid_yes(uuid, uuid) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR evil.= (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = evil.uuid_yes);
CREATE FUNCTION evil.count(anyelement) RETURNS bigint LANGUAGE sql AS 'SELECT 42::bigint';
CREATE FUNCTION evil.current_setting(text, boolean) RETURNS text LANGUAGE sql AS $$SELECT 'on'$$;
CREATE TABLE s_plain (id int PRIMARY KEY, v int);
INSERT INTO s_plain VALUES (1, 1), (2, 2);
SET search_path = evil, pg_catalog, public;
SELECT 1 = 2 AS planted_equals_active, current_setting('anything', true) AS planted_setting;
SELECT * FROM idem.merge_query('s_plain', 'SELECT * FROM (VALUES (1, 1), (2, 20), (3, 3)) s(id, v)');
SELECT show_error($$SELECT * FROM idem.merge_query('s_plain', 'SELECT * FROM (VALUES (NULL::int, 1)) s(id, v)')$$);
RESET search_path;
SELECT * FROM s_plain ORDER BY id;

-- Caller SQL (the query, delete_scope) runs under the caller's search_path.
CREATE SCHEMA staging;
CREATE TABLE staging.feed (id int, v int);
INSERT INTO staging.feed VALUES (1, 1), (2, 20), (3, 3), (4, 4);
SET search_path = staging, public;
SELECT * FROM idem.merge_query('s_plain', 'SELECT * FROM feed', delete_missing => true, delete_scope => 'v < 100');
RESET search_path;
SELECT * FROM s_plain ORDER BY id;

DROP SCHEMA evil CASCADE;
DROP SCHEMA staging CASCADE;
DROP SCHEMA "My Schema" CASCADE;
DROP TABLE s_target;
DROP ROLE s_inserter;
DROP ROLE s_writer;
