-- merge: bad input gets a clear error and changes nothing.
CREATE TABLE e_target (id int PRIMARY KEY, a text, b int DEFAULT 7,
                       g int GENERATED ALWAYS AS (b * 2) STORED,
                       ident int GENERATED ALWAYS AS IDENTITY,
                       d_pos int CHECK (d_pos > 0));
CREATE TABLE e_nokey (id int, a text);
CREATE TABLE e_src (id int, a text);
INSERT INTO e_src VALUES (1, 'x');

-- NULL arguments.
SELECT show_error($$SELECT * FROM idem.merge(NULL, 'e_src')$$);
SELECT show_error($$SELECT * FROM idem.merge('e_target', NULL)$$);
SELECT show_error($$SELECT * FROM idem.merge('e_target', 'e_src', delete_missing => NULL)$$);
SELECT show_error($$SELECT * FROM idem.merge('e_target', 'e_src', dry_run => NULL)$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', NULL)$$);
SELECT show_error($$SELECT * FROM idem.merge('e_target', 'e_src', key => ARRAY[NULL])$$);

-- Keys: none, empty, repeated, unknown, not unique.
SELECT show_error($$SELECT * FROM idem.merge('e_nokey', 'e_src')$$);
SELECT show_error($$SELECT * FROM idem.merge('e_nokey', 'e_src', key => '{id}')$$);
SELECT show_error($$SELECT * FROM idem.merge('e_target', 'e_src', key => '{}')$$);
SELECT show_error($$SELECT * FROM idem.merge('e_target', 'e_src', key => '{id,id}')$$);
SELECT show_error($$SELECT * FROM idem.merge('e_target', 'e_src', key => '{nope}')$$);
SELECT show_error($$SELECT * FROM idem.merge('e_target', 'e_src', key => '{a}')$$);
CREATE UNIQUE INDEX e_nokey_partial ON e_nokey (id) WHERE id > 0;
SELECT show_error($$SELECT * FROM idem.merge('e_nokey', 'e_src', key => '{id}')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS ident, ''x'' AS a', key => '{id}')$$);

-- NULL keys in the source: 23502 naming the column and the count.
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT NULL::int AS id, ''x'' AS a FROM generate_series(1, 3)')$$);
-- A composite key: the NULLs of each column are counted over every row,
-- also when the rows with a NULL have different keys or repeat one; the
-- first column's count comes first. Nothing is written: into an empty
-- target (the first load gives way to the whole statement), or not.
CREATE TABLE e_pair (a int, b int, v text, PRIMARY KEY (a, b));
SELECT show_error($$SELECT * FROM idem.merge_query('e_pair',
  'SELECT * FROM (VALUES (1, NULL::int, ''x''), (2, NULL, ''x''), (2, NULL, ''x''), (NULL, NULL, ''x''), (NULL, 5, ''y''), (3, 3, ''z'')) AS m(a, b, v)')$$);
INSERT INTO e_pair VALUES (9, 9, 'kept');
SELECT show_error($$SELECT * FROM idem.merge_query('e_pair',
  'SELECT * FROM (VALUES (1, NULL::int, ''x''), (2, NULL, ''x''), (2, NULL, ''y''), (3, 3, ''z''), (3, 3, ''z'')) AS m(a, b, v)')$$);
SELECT * FROM e_pair;

-- Schema drift is loud; columns narrows it.
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id, ''x'' AS a, 5 AS extra')$$);
SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id, ''x'' AS a, 5 AS extra', columns => '{a}');
SELECT id, a, b, g, d_pos FROM e_target;
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id, ''x'' AS a', columns => '{nope}')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id, ''x'' AS a', columns => '{b}')$$);
-- A key in columns is no error (dbt's merge_update_columns often lists it):
-- it writes nothing, so a columns of only the key updates nothing.
SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id, ''y'' AS a', columns => '{id}');
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id, 1 AS g', columns => '{g}')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id, ''y'' AS a', columns => '{a,a}')$$);

-- columns: an update writes only those; an insert writes every source column
-- the target has. Target columns the source lacks keep their value on update
-- and take their default on insert. Generated columns are computed.
SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id, ''changed'' AS a, 100 AS b', columns => '{a}');
SELECT * FROM idem.merge_query('e_target', 'SELECT 2 AS id, ''two'' AS a, 100 AS b', columns => '{a}');
SELECT id, a, b, g FROM e_target ORDER BY id;
-- Only columns count for "unchanged": b differs but is not written.
SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id, ''changed'' AS a, 5 AS b', columns => '{a}');
-- A generated column in the source is never written.
SELECT * FROM idem.merge_query('e_target', 'SELECT 3 AS id, ''three'' AS a, 1 AS g');
SELECT id, g FROM e_target WHERE id = 3;

-- GENERATED ALWAYS identity: an error, never silently overridden...
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 4 AS id, ''four'' AS a, 99 AS ident')$$);
-- ...unless the documented option asks for OVERRIDING SYSTEM VALUE.
SET idem.override_identity = on;
SELECT * FROM idem.merge_query('e_target', 'SELECT 4 AS id, ''four'' AS a, 99 AS ident');
RESET idem.override_identity;
SELECT id, ident FROM e_target WHERE id = 4;

-- Types convert by assignment cast, else an error naming the column.
SELECT * FROM idem.merge_query('e_target', 'SELECT 5::bigint AS id, 42 AS a, 1.6 AS b');
SELECT id, a, b FROM e_target WHERE id = 5;
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 6 AS id, ''{1}''::int[] AS b')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 6 AS id, ''not a number''::text AS b')$$);
-- A value the target refuses (CHECK, a domain): the whole merge fails.
CREATE DOMAIN positive AS int CHECK (VALUE > 0);
CREATE TABLE e_dom (id int PRIMARY KEY, p positive);
SELECT * FROM idem.merge_query('e_dom', 'SELECT 1 AS id, 5 AS p');
SELECT show_error($$SELECT * FROM idem.merge_query('e_dom', 'SELECT * FROM (VALUES (2, 1), (3, -1)) v(id, p)')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT * FROM (VALUES (7, 1), (8, -1)) v(id, d_pos)')$$);
SELECT count(*) AS nothing_half_done FROM e_target WHERE id IN (7, 8);

-- Length-limited types convert as an INSERT converts them: a value too long
-- for varchar(n), char(n), bit(n) or varbit(n) is 22001 (22026 for bit(n))
-- for a key, a version and an ordinary column alike, never silently cut (two keys cut to the same
-- prefix would become one); trailing spaces beyond the length are dropped,
-- as by an INSERT; a rerun of what fits is unchanged.
CREATE TABLE e_len (k varchar(3) PRIMARY KEY, c char(3), b bit(3), vb varbit(3), v varchar(2));
SELECT * FROM idem.merge_query('e_len', $$SELECT 'abc' AS k, 'ab' AS c, B'101' AS b, B'1' AS vb, 'xy' AS v$$);
SELECT * FROM idem.merge_query('e_len', $$SELECT 'abc' AS k, 'ab' AS c, B'101' AS b, B'1' AS vb, 'xy' AS v$$) AS rerun;
SELECT * FROM idem.merge_query('e_len', $$SELECT 'abc  ' AS k, 'ab  ' AS c, B'101' AS b, B'1' AS vb, 'xy ' AS v$$) AS spaces_beyond;
SELECT show_error($$SELECT * FROM idem.merge_query('e_len', 'SELECT ''abcd'' AS k')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_len', 'SELECT * FROM (VALUES (''abcd''), (''abce'')) s(k)')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_len', 'SELECT ''abc'' AS k, ''abcd'' AS c')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_len', 'SELECT ''abc'' AS k, B''1011'' AS b')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_len', 'SELECT ''abc'' AS k, B''1011'' AS vb')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_len', 'SELECT ''abc'' AS k, ''xyz'' AS v', version_column => 'v')$$);
SELECT k, c, b, vb, v, length(c::text) AS c_len FROM e_len;
-- The same under a domain over varchar(n): the length is the domain's base
-- typmod, and the domain's constraints are checked after it.
CREATE DOMAIN e_short AS varchar(3) CHECK (VALUE <> 'bad');
CREATE TABLE e_len_dom (k e_short PRIMARY KEY, v e_short);
SELECT * FROM idem.merge_query('e_len_dom', $$SELECT 'abc' AS k, 'xy ' AS v$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_len_dom', 'SELECT ''abcd'' AS k')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_len_dom', 'SELECT ''abc'' AS k, ''wxyz'' AS v')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_len_dom', 'SELECT ''abc'' AS k, ''bad'' AS v')$$);
SELECT k, v, length(v::text) AS v_len FROM e_len_dom;
DROP TABLE e_len_dom;
DROP DOMAIN e_short;

-- Wrong objects and queries.
CREATE VIEW e_view AS SELECT * FROM e_target;
SELECT show_error($$SELECT * FROM idem.merge('e_view', 'e_src')$$);
CREATE SEQUENCE e_seq;
SELECT show_error($$SELECT * FROM idem.merge('e_target', 'e_seq')$$);
SELECT show_error($$SELECT * FROM idem.merge('e_target', 'no_such_source')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELEKT 1')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id, 2 AS id')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id', delete_column => 'nope')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id, 1 AS flag', delete_column => 'flag')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('e_target', 'SELECT 1 AS id', version_column => 'nope')$$);
