-- Running as the caller: privileges and row-level security apply to the
-- checksum exactly as to the caller's own SELECT. Hostile identifiers and a
-- hostile search_path change nothing.
CREATE TABLE secret (id int, owner_name text, payload text);
INSERT INTO secret VALUES (1, 'alice', 'a1'), (2, 'bob', 'b1'), (3, 'alice', 'a2');
CREATE ROLE idem_reader;
CREATE ROLE idem_stranger;
GRANT SELECT ON secret TO idem_reader;

-- No SELECT privilege: permission denied (42501), as for a plain SELECT.
SET ROLE idem_stranger;
SELECT show_error($$SELECT idem.checksum('secret')$$);
SELECT show_error($$SELECT idem.checksum_query('SELECT * FROM secret')$$);
SELECT show_error($$SELECT * FROM idem.diff('secret', 'secret')$$);
RESET ROLE;

-- Column privileges: a reader allowed two columns may checksum just those.
GRANT SELECT (id, owner_name) ON secret TO idem_stranger;
SET ROLE idem_stranger;
SELECT show_error($$SELECT idem.checksum('secret')$$);
SELECT idem.checksum('secret', '{payload}') = idem.checksum_query('SELECT id, owner_name FROM secret') AS column_privileges_apply;
RESET ROLE;

-- Row-level security: the reader's checksum covers the rows the reader sees.
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_alice ON secret FOR SELECT USING (owner_name = 'alice');
SELECT idem.checksum_query($$SELECT * FROM secret WHERE owner_name = 'alice'$$) AS alice_rows \gset
SET ROLE idem_reader;
SELECT idem.checksum('secret') = :'alice_rows' AS rls_applies,
       split_part(idem.checksum('secret'), ':', 2) AS visible_rows;
RESET ROLE;

-- Hostile identifiers: quotes, spaces, upper case, a semicolon.
CREATE SCHEMA "Odd Schema";
CREATE TABLE "Odd Schema"."Tab""le; DROP TABLE secret; --" ("Col ""1""" int, "SELECT" text, ";" text);
INSERT INTO "Odd Schema"."Tab""le; DROP TABLE secret; --" VALUES (1, 'x', 'y');
SELECT idem.checksum('"Odd Schema"."Tab""le; DROP TABLE secret; --"') =
       idem.checksum_query($$SELECT 1, 'x', 'y'$$) AS hostile_names_quoted;
SELECT idem.checksum('"Odd Schema"."Tab""le; DROP TABLE secret; --"', ARRAY['Col "1"', ';']) =
       idem.checksum_query($$SELECT 'x'$$) AS hostile_exclude_quoted;
SELECT * FROM idem.diff('"Odd Schema"."Tab""le; DROP TABLE secret; --"', '"Odd Schema"."Tab""le; DROP TABLE secret; --"');
SELECT show_error($$SELECT idem.checksum('secret', ARRAY['id"; DROP TABLE secret; --'])$$);
SELECT count(*) AS secret_still_there FROM secret;

-- A hostile search_path: a schema ahead of pg_catalog plants operators and
-- functions with the names the extension's own SQL uses. diff builds SQL
-- with =, <>, >, sum, abs and to_jsonb; every one is schema-qualified.
CREATE SCHEMA evil;
CREATE FUNCTION evil.always_true(uuid, uuid) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR evil.= (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = evil.always_true);
CREATE FUNCTION evil.always_false(bigint, integer) RETURNS boolean LANGUAGE sql AS 'SELECT false';
CREATE OPERATOR evil.<> (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = evil.always_false);
CREATE OPERATOR evil.> (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = evil.always_false);
CREATE FUNCTION evil.abs(bigint) RETURNS bigint LANGUAGE sql AS 'SELECT 999';
CREATE FUNCTION evil.to_jsonb(anyelement) RETURNS jsonb LANGUAGE sql AS $$SELECT '"planted"'::jsonb$$;
CREATE FUNCTION evil.sum(integer) RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint';
CREATE TABLE evil_a (v int);
CREATE TABLE evil_b (v int);
INSERT INTO evil_a VALUES (1), (2), (2);
INSERT INTO evil_b VALUES (2), (3);
SELECT * FROM idem.diff('evil_a', 'evil_b') AS trusted;
SET search_path = evil, pg_catalog, public;
-- The plants work on unqualified SQL...
SELECT 2::bigint > 1 AS planted_gt, 2::bigint <> 1 AS planted_ne, abs(-5::bigint) AS planted_abs;
-- ...and change nothing in the extension's.
SELECT * FROM idem.diff('evil_a', 'evil_b') AS under_hostile_path;
SELECT idem.checksum('evil_a') = idem.checksum_query('SELECT * FROM public.evil_a') AS checksum_unaffected;
RESET search_path;

-- Caller-supplied SQL runs under the caller's own search_path: a query that
-- names an unqualified table finds it where the caller would.
CREATE SCHEMA other_place;
CREATE TABLE other_place.evil_a (v int);
INSERT INTO other_place.evil_a VALUES (42);
SET search_path = other_place, public;
SELECT idem.checksum_query('SELECT * FROM evil_a') = idem.checksum_query('VALUES (42)') AS caller_search_path_used;
RESET search_path;

DROP SCHEMA evil CASCADE;
DROP SCHEMA other_place CASCADE;
DROP SCHEMA "Odd Schema" CASCADE;
DROP TABLE secret;
DROP ROLE idem_reader;
DROP ROLE idem_stranger;
