-- What PostgreSQL 18 adds to tables, as pg_idempotent sees it. On an older
-- major the file ends here (expected/pg18_features_1.out).
SELECT current_setting('server_version_num')::int >= 180000 AS is_pg18 \gset
\if :is_pg18
\else
\quit
\endif

-- Virtual generated columns (the default kind of generated column on 18):
-- merge never writes them; the "same row" compares what is stored, so a
-- replay is unchanged; the checksum covers the computed value, as SELECT *
-- shows it (the same rule as for stored generated columns).
CREATE TABLE g18 (id int PRIMARY KEY, a int NOT NULL, doubled int GENERATED ALWAYS AS (a * 2) VIRTUAL);
SELECT * FROM idem.merge_query('g18', 'SELECT 1 AS id, 10 AS a UNION ALL SELECT 2, 20', '{id}');
SELECT * FROM g18 ORDER BY id;
SELECT * FROM idem.merge_query('g18', 'SELECT 1 AS id, 10 AS a UNION ALL SELECT 2, 20', '{id}') AS replay;
SELECT * FROM idem.merge_query('g18', 'SELECT 1 AS id, 11 AS a', '{id}') AS one_changed;
SELECT * FROM g18 ORDER BY id;
SELECT idem.checksum('g18') = idem.checksum_query('SELECT 1, 11, 22 UNION ALL SELECT 2, 20, 40') AS computed_value_included;
-- A source column named like the virtual column is not written: the target
-- computes it, as for a stored generated column.
SELECT * FROM idem.merge_query('g18', 'SELECT 3 AS id, 30 AS a, 99 AS doubled', '{id}');
SELECT doubled FROM g18 WHERE id = 3;
-- overwrite maps the query's columns onto the writable ones.
CREATE TABLE gp18 (day date NOT NULL, n int, twice int GENERATED ALWAYS AS (n * 2) VIRTUAL) PARTITION BY RANGE (day);
CREATE TABLE gp18_0707 PARTITION OF gp18 FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
SELECT * FROM idem.overwrite_partition('gp18', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g FROM generate_series(1, 3) g');
SELECT * FROM idem.overwrite_partition('gp18', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g FROM generate_series(1, 3) g') AS rerun;
SELECT sum(twice) AS twice_total FROM gp18;

-- uuidv7() defaults: a merged row keeps the value its insert drew.
CREATE TABLE u18 (id int PRIMARY KEY, k uuid NOT NULL DEFAULT uuidv7(), v text);
SELECT * FROM idem.merge_query('u18', 'SELECT 1 AS id, ''x'' AS v', '{id}');
SELECT k AS first_k FROM u18 \gset
SELECT * FROM idem.merge_query('u18', 'SELECT 1 AS id, ''y'' AS v', '{id}') AS updated;
SELECT k = :'first_k'::uuid AS key_kept, v FROM u18;

-- NOT NULL constraints are rows of pg_constraint on 18: a staging table
-- without the partition's NOT NULL is still refused by swap_partition.
CREATE TABLE nn18 (day date NOT NULL, n int NOT NULL) PARTITION BY RANGE (day);
CREATE TABLE nn18_0707 PARTITION OF nn18 FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE nn18_stage (day date NOT NULL, n int);
INSERT INTO nn18_stage VALUES ('2024-07-07', 1);
SELECT regexp_replace(show_error($$SELECT idem.swap_partition('nn18_0707', 'nn18_stage')$$), ' \| .*', '') AS refused;
ALTER TABLE nn18_stage ALTER COLUMN n SET NOT NULL;
SELECT idem.swap_partition('nn18_0707', 'nn18_stage') AS swapped;
SELECT count(*) AS rows_swapped_in FROM nn18;

-- RETURNING OLD and NEW: caller SQL that returns rows (checksum_query takes
-- a data-modifying statement with RETURNING) may return both images; the
-- extension's own statements do not use them.
SELECT idem.checksum_query('UPDATE u18 SET v = ''z'' RETURNING old.v, new.v')
       = idem.checksum_query('SELECT ''y'', ''z''') AS old_and_new;
SELECT v FROM u18;

DROP TABLE g18, gp18, u18, nn18;
