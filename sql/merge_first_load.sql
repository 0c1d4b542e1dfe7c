-- A merge into an empty target is one INSERT ... ON CONFLICT (docs/merge.md,
-- "The first load"). When the batch has a NULL key or repeats a key, that
-- attempt is rolled back and the whole statement runs: the results must be
-- exactly those of the whole statement, and nothing of the attempt stays.

CREATE TABLE fl_target (id int PRIMARY KEY, v text);
CREATE TABLE fl_source (id int, v text);
INSERT INTO fl_source SELECT g, 'v' || g FROM generate_series(1, 5) g;
SELECT * FROM idem.merge('fl_target', 'fl_source');
SELECT count(*) AS rows, min(id), max(id) FROM fl_target;

-- Identical rows repeated in the batch: the attempt meets a key twice and
-- gives way; the whole statement collapses them.
TRUNCATE fl_target;
INSERT INTO fl_source VALUES (3, 'v3'), (5, 'v5');
SELECT * FROM idem.merge('fl_target', 'fl_source');
SELECT id, v FROM fl_target ORDER BY id;
-- Differing rows under one key: 21000 naming the key, nothing written.
TRUNCATE fl_target;
INSERT INTO fl_source VALUES (4, 'other');
SELECT show_error($$SELECT * FROM idem.merge('fl_target', 'fl_source')$$);
SELECT count(*) AS rows_after_the_error FROM fl_target;
DELETE FROM fl_source WHERE v = 'other';

-- A NULL key into a unique index that allows NULLs (not a primary key):
-- the attempt must not insert it; 23502 with the count, nothing written.
CREATE TABLE fl_nullable (id int UNIQUE, v text);
INSERT INTO fl_source VALUES (NULL, 'n1'), (NULL, 'n2');
SELECT show_error($$SELECT * FROM idem.merge('fl_nullable', 'fl_source', key => '{id}')$$);
SELECT count(*) AS rows_after_the_error FROM fl_nullable;
DELETE FROM fl_source WHERE id IS NULL;

-- A partitioned target, and a second merge (no longer a first load).
CREATE TABLE fl_parts (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE fl_parts_1 PARTITION OF fl_parts FOR VALUES FROM (1) TO (4);
CREATE TABLE fl_parts_2 PARTITION OF fl_parts FOR VALUES FROM (4) TO (100);
SELECT * FROM idem.merge('fl_parts', 'fl_source');
SELECT * FROM idem.merge('fl_parts', 'fl_source');
SELECT tableoid::regclass AS partition, count(*) FROM fl_parts GROUP BY 1 ORDER BY 1;

-- A first load from a query, under a hostile search_path: the planted
-- operators and count() are never used.
CREATE TABLE fl_q (id bigint PRIMARY KEY, v text);
CREATE SCHEMA fl_evil;
CREATE FUNCTION fl_evil.yes(bigint, bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR fl_evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = fl_evil.yes);
CREATE FUNCTION fl_evil.count(anyelement) RETURNS bigint LANGUAGE sql AS 'SELECT 42::bigint';
SET search_path = fl_evil, pg_catalog, public;
SELECT * FROM idem.merge_query('fl_q', 'SELECT g::bigint AS id, ''q'' || g AS v FROM generate_series(1, 3) g');
SELECT * FROM idem.merge_query('fl_q', 'SELECT g::bigint AS id, ''q'' || g AS v FROM generate_series(1, 4) g');
RESET search_path;
SELECT id, v FROM fl_q ORDER BY id;

-- The run history records a first load as any merge.
SELECT function_name, target, action, counts FROM idem.run_history
 WHERE target IN ('public.fl_target', 'public.fl_q') ORDER BY id;
