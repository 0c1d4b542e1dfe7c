-- idem.snapshot: history tables (slowly changing dimensions, type 2, dbt's
-- snapshots). Each story of dbt's tracker that corrupts a history is run
-- here, then the rerun that must write nothing (docs/snapshot.md).
CREATE TABLE s_customers (id int PRIMARY KEY, name text, tier text);
INSERT INTO s_customers VALUES (1, 'Ada', 'gold'), (2, 'Bo', NULL), (3, 'Cy', 'silver');
CREATE TABLE s_hist (id int NOT NULL, name text, tier text, valid_from timestamptz NOT NULL, valid_to timestamptz);

-- The one-current-version-per-key index is required, and created once.
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}')$$);
SELECT idem.snapshot_prepare('s_hist', '{id}') AS index_name;
SELECT idem.snapshot_prepare('s_hist', '{id}') AS same_index_again;

-- First load, then the rerun: nothing written (no row version changes).
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', as_of => '2024-07-01');
CREATE TABLE s_before AS SELECT ctid AS c, xmin::text AS x FROM s_hist;
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', as_of => '2024-07-02');
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}');
SELECT (SELECT count(*) FROM s_hist) AS versions,
       (SELECT count(*) FROM s_hist h JOIN s_before b ON b.c = h.ctid AND b.x = h.xmin::text) AS untouched;
-- With the run history at 'changes' (or off), the rerun's transaction writes
-- no row and locks none: it never gets a transaction id.
BEGIN;
SET LOCAL idem.history = changes;
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', as_of => '2024-07-02');
SELECT pg_current_xact_id_if_assigned() IS NULL AS no_transaction_id;
COMMIT;

-- dbt-core#11235: a check column that goes from NULL to a value (and back)
-- is one change each time, never two rows; the rerun writes nothing.
UPDATE s_customers SET tier = 'bronze' WHERE id = 2;
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', as_of => '2024-07-03');
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', as_of => '2024-07-04');
UPDATE s_customers SET tier = NULL WHERE id = 2;
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', as_of => '2024-07-05');
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', as_of => '2024-07-06');
SELECT id, tier, valid_from, valid_to FROM s_hist WHERE id = 2 ORDER BY valid_from;

-- columns: only the listed columns open a version.
UPDATE s_customers SET name = 'Ada L.' WHERE id = 1;
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', columns => '{tier}', as_of => '2024-07-07');
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', exclude_columns => '{name}', as_of => '2024-07-07');
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', as_of => '2024-07-07');

-- Hard deletes: ignore keeps the version, invalidate closes it; a key that
-- comes back opens a new one; intervals never overlap.
DELETE FROM s_customers WHERE id = 3;
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', as_of => '2024-07-08');
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', hard_deletes => 'invalidate', as_of => '2024-07-08');
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', hard_deletes => 'invalidate', as_of => '2024-07-09');
INSERT INTO s_customers VALUES (3, 'Cy', 'silver');
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', hard_deletes => 'invalidate', as_of => '2024-07-07')$$);
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', hard_deletes => 'invalidate', as_of => '2024-07-10');
SELECT id, tier, valid_from, valid_to FROM s_hist WHERE id = 3 ORDER BY valid_from;
-- An empty source would close every version: refused unless asked for.
SELECT show_error($$SELECT * FROM idem.snapshot_query('s_hist', 'SELECT * FROM s_customers WHERE false', '{id}', hard_deletes => 'invalidate', as_of => '2024-07-11')$$);
BEGIN;
SELECT * FROM idem.snapshot_query('s_hist', 'SELECT * FROM s_customers WHERE false', '{id}', hard_deletes => 'invalidate',
                                  allow_empty => true, as_of => '2024-07-11');
ROLLBACK;
-- Every key has one current version, and no two versions of a key overlap.
SELECT count(*) AS keys_with_two_current FROM (SELECT id FROM s_hist WHERE valid_to IS NULL GROUP BY id HAVING count(*) > 1) x;
SELECT count(*) AS overlaps FROM s_hist a JOIN s_hist b ON a.id = b.id AND a.ctid <> b.ctid
 WHERE tstzrange(a.valid_from, a.valid_to) && tstzrange(b.valid_from, b.valid_to);

-- dbt-core#4661: two runs must never leave two current versions. The index
-- refuses a second one written by hand; snapshot_prepare refuses a table
-- that already has one (and says which key). Two runs at once:
-- test/specs/snapshot_concurrent.spec.
SELECT show_error($$INSERT INTO s_hist VALUES (1, 'x', 'x', '2024-08-01', NULL)$$);
CREATE TABLE s_broken (id int, name text, tier text, valid_from timestamptz, valid_to timestamptz);
INSERT INTO s_broken VALUES (1, 'a', NULL, '2024-01-01', NULL), (1, 'a', NULL, '2024-01-02', NULL);
SELECT show_error($$SELECT idem.snapshot_prepare('s_broken', '{id}')$$);

-- dbt-core#11950: a NULL in a composite key is refused with the count, and
-- nothing is written (dbt added a row for it on every run).
CREATE TABLE s_region (region text, id int, v int, valid_from timestamptz, valid_to timestamptz);
SELECT idem.snapshot_prepare('s_region', '{region,id}');
SELECT show_error($$SELECT * FROM idem.snapshot_query('s_region', 'SELECT ''eu'' AS region, 1 AS id, 1 AS v UNION ALL SELECT NULL, 2, 2', '{region,id}')$$);
SELECT * FROM idem.snapshot_query('s_region', 'SELECT ''eu'' AS region, 1 AS id, 1 AS v UNION ALL SELECT ''us'', 2, 2', '{region,id}',
                                  as_of => '2024-07-01');
SELECT * FROM idem.snapshot_query('s_region', 'SELECT ''eu'' AS region, 1 AS id, 1 AS v UNION ALL SELECT ''us'', 2, 2', '{region,id}',
                                  as_of => '2024-07-02');
SELECT count(*) AS region_versions FROM s_region;

-- dbt-core#6215: a duplicate key in the source. Identical rows collapse;
-- differing rows are refused (nothing written), so the next run still works.
SELECT * FROM idem.snapshot_query('s_region', 'SELECT ''eu'' AS region, 1 AS id, 1 AS v UNION ALL SELECT ''eu'', 1, 1', '{region,id}',
                                  as_of => '2024-07-03');
SELECT show_error($$SELECT * FROM idem.snapshot_query('s_region', 'SELECT ''eu'' AS region, 1 AS id, 1 AS v UNION ALL SELECT ''eu'', 1, 2', '{region,id}', as_of => '2024-07-03')$$);
SELECT * FROM idem.snapshot_query('s_region', 'SELECT ''eu'' AS region, 1 AS id, 2 AS v', '{region,id}', as_of => '2024-07-04');
SELECT region, id, v, valid_from, valid_to FROM s_region ORDER BY region, id, valid_from;

-- The timestamp strategy: a larger updated_at opens a version; an older or
-- equal one with other content is stale (counted, never written); the
-- duplicate of a key at a smaller updated_at loses.
CREATE TABLE s_events (id int, v text, updated timestamptz, valid_from timestamptz, valid_to timestamptz);
SELECT idem.snapshot_prepare('s_events', '{id}');
CREATE TABLE s_feed (id int, v text, updated timestamptz);
INSERT INTO s_feed VALUES (1, 'a', '2024-01-01'), (2, 'b', '2024-01-01');
SELECT * FROM idem.snapshot('s_events', 's_feed', '{id}', strategy => 'timestamp', updated_at => 'updated', as_of => '2024-07-01');
UPDATE s_feed SET v = 'a2', updated = '2024-02-01' WHERE id = 1;
UPDATE s_feed SET v = 'b-late', updated = '2023-12-01' WHERE id = 2;
INSERT INTO s_feed VALUES (1, 'a-older', '2023-01-01');
SELECT * FROM idem.snapshot('s_events', 's_feed', '{id}', strategy => 'timestamp', updated_at => 'updated', as_of => '2024-07-02');
SELECT * FROM idem.snapshot('s_events', 's_feed', '{id}', strategy => 'timestamp', updated_at => 'updated', as_of => '2024-07-03');
SELECT id, v, updated, valid_from, valid_to FROM s_events ORDER BY id, valid_from;
INSERT INTO s_feed VALUES (3, 'c', NULL);
SELECT show_error($$SELECT * FROM idem.snapshot('s_events', 's_feed', '{id}', strategy => 'timestamp', updated_at => 'updated')$$);

-- A job that snapshots is rerun-safe, as assert_rerun_safe proves: three
-- runs, one checksum (rolled back afterwards). A job that closes and reopens
-- versions by hand on every run is not, and is named.
SELECT run, table_name::text, row_count
  FROM idem.assert_rerun_safe($$SELECT * FROM idem.snapshot_query('s_events', 'SELECT * FROM s_feed WHERE updated IS NOT NULL',
                                  '{id}', strategy => 'timestamp', updated_at => 'updated', as_of => '2024-07-09')$$,
                               '{s_events}', runs => 3, allow_unchanged => true);
SELECT count(*) AS s_events_versions_unchanged FROM s_events;
SELECT show_error($$SELECT * FROM idem.assert_rerun_safe('UPDATE s_events SET valid_to = now() WHERE valid_to IS NULL; INSERT INTO s_events SELECT DISTINCT ON (id) id, v, updated, now(), NULL FROM s_feed WHERE updated IS NOT NULL ORDER BY id, updated DESC', '{s_events}')$$)
       LIKE 'ID002 | job is not rerun-safe: run 2 changed "public.s_events" | %' AS hand_written_job_named;

-- Every run is in the run history.
SELECT function_name, target, unit, action, counts, rows_written FROM idem.run_history
 WHERE function_name LIKE 'snapshot%' ORDER BY id DESC LIMIT 3;

-- A partitioned history (hash on the key: the index can be unique).
CREATE TABLE s_part (id int NOT NULL, tier text, valid_from timestamptz, valid_to timestamptz) PARTITION BY HASH (id);
CREATE TABLE s_part_0 PARTITION OF s_part FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE s_part_1 PARTITION OF s_part FOR VALUES WITH (MODULUS 2, REMAINDER 1);
SELECT idem.snapshot_prepare('s_part', '{id}') IS NOT NULL AS prepared;
SELECT * FROM idem.snapshot_query('s_part', 'SELECT id, tier FROM s_customers', '{id}', as_of => '2024-07-01');
UPDATE s_customers SET tier = 'platinum' WHERE id = 1;
SELECT * FROM idem.snapshot_query('s_part', 'SELECT id, tier FROM s_customers', '{id}', as_of => '2024-07-02');
SELECT * FROM idem.snapshot_query('s_part', 'SELECT id, tier FROM s_customers', '{id}', as_of => '2024-07-03');
-- A history partitioned by time cannot have a unique index on the key
-- alone: refused with the reason and what to do instead.
CREATE TABLE s_by_time (id int NOT NULL, tier text, valid_from timestamptz NOT NULL, valid_to timestamptz)
  PARTITION BY RANGE (valid_from);
SELECT show_error($$SELECT idem.snapshot_prepare('s_by_time', '{id}')$$);
DROP TABLE s_by_time;

-- hard_deletes => 'new_record': a gone key's version is closed and a copy
-- marked deleted opens; the rerun writes nothing (the marker is current);
-- a key that comes back closes the marker and opens a version.
CREATE TABLE s_src (id int, v text);
INSERT INTO s_src VALUES (1, 'a'), (2, 'b');
CREATE TABLE s_del (id int NOT NULL, v text, is_deleted boolean NOT NULL DEFAULT false,
                    valid_from timestamptz NOT NULL, valid_to timestamptz);
SELECT idem.snapshot_prepare('s_del', '{id}') IS NOT NULL AS prepared;
SELECT * FROM idem.snapshot('s_del', 's_src', '{id}', hard_deletes => 'new_record', as_of => '2024-07-01');
DELETE FROM s_src WHERE id = 2;
SELECT * FROM idem.snapshot('s_del', 's_src', '{id}', hard_deletes => 'new_record', as_of => '2024-07-02');
SELECT * FROM idem.snapshot('s_del', 's_src', '{id}', hard_deletes => 'new_record', as_of => '2024-07-03');
INSERT INTO s_src VALUES (2, 'b2');
SELECT * FROM idem.snapshot('s_del', 's_src', '{id}', hard_deletes => 'new_record', as_of => '2024-07-04');
SELECT * FROM idem.snapshot('s_del', 's_src', '{id}', hard_deletes => 'new_record', as_of => '2024-07-05');
SELECT id, v, is_deleted, valid_from, valid_to FROM s_del ORDER BY id, valid_from;
SELECT rows_written FROM idem.run_history WHERE target = 'public.s_del' ORDER BY id;
SELECT show_error($$SELECT * FROM idem.snapshot('s_del', 's_src', '{id}', hard_deletes => 'new_record', deleted_column => 'v')$$);
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', hard_deletes => 'new_record')$$);
SELECT show_error($$SELECT * FROM idem.snapshot_query('s_del', 'SELECT id, v, false AS is_deleted FROM s_src', '{id}', hard_deletes => 'new_record')$$);

-- valid_to_current: current versions end at 'infinity' (dbt's
-- dbt_valid_to_current), so that range queries need no NULL test; the index
-- of one current version per key is on that value.
CREATE TABLE s_inf (id int NOT NULL, v text, valid_from timestamptz NOT NULL, valid_to timestamptz NOT NULL);
SELECT show_error($$SELECT * FROM idem.snapshot('s_inf', 's_src', '{id}', valid_to_current => 'infinity')$$);
SELECT idem.snapshot_prepare('s_inf', '{id}', valid_to_current => 'infinity') AS index_name;
SELECT idem.snapshot_prepare('s_inf', '{id}', valid_to_current => 'infinity') AS same_index_again;
SELECT pg_get_indexdef(idem.snapshot_prepare('s_inf', '{id}', valid_to_current => 'infinity')::regclass) AS definition;
SELECT * FROM idem.snapshot('s_inf', 's_src', '{id}', valid_to_current => 'infinity', as_of => '2024-07-01');
SELECT * FROM idem.snapshot('s_inf', 's_src', '{id}', valid_to_current => 'infinity', as_of => '2024-07-02');
UPDATE s_src SET v = 'a2' WHERE id = 1;
SELECT * FROM idem.snapshot('s_inf', 's_src', '{id}', valid_to_current => 'infinity', as_of => '2024-07-03');
SELECT id, v, valid_from, valid_to FROM s_inf ORDER BY id, valid_from;
-- Without valid_to_current the index does not fit (NULL is not 'infinity').
SELECT show_error($$SELECT * FROM idem.snapshot('s_inf', 's_src', '{id}')$$);
SELECT show_error($$SELECT idem.snapshot_prepare('s_inf', '{id}', valid_to_current => 'not a time')$$);

-- Bad input: a clear error with a HINT, nothing written.
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{}')$$);
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', NULL)$$);
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', strategy => 'newest')$$);
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', strategy => 'timestamp')$$);
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', updated_at => 'name')$$);
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', hard_deletes => 'delete')$$);
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', columns => '{tier}', exclude_columns => '{name}')$$);
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', columns => '{id}')$$);
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', valid_to => 'ends')$$);
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', valid_from => 'name')$$);
SELECT show_error($$SELECT * FROM idem.snapshot_query('s_hist', 'SELECT 1 AS id, now() AS valid_from', '{id}')$$);
SELECT show_error($$SELECT * FROM idem.snapshot_query('s_hist', 'SELECT 1 AS id, 2 AS extra', '{id}')$$);
SELECT show_error($$SELECT * FROM idem.snapshot('s_customers_v', 's_customers', '{id}')$$);
CREATE VIEW s_hist_v AS SELECT * FROM s_hist;
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist_v', 's_customers', '{id}')$$);
SELECT show_error($$SELECT idem.snapshot_prepare('s_hist', '{nope}')$$);

-- A role may snapshot a history it can read, insert and update, and only that.
CREATE ROLE s_etl;
GRANT SELECT ON s_customers TO s_etl;
GRANT SELECT, INSERT ON s_hist TO s_etl;
SET ROLE s_etl;
SELECT show_error($$SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}')$$);
RESET ROLE;
GRANT UPDATE ON s_hist TO s_etl;
SET ROLE s_etl;
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', as_of => '2024-07-20');
SELECT * FROM idem.snapshot('s_hist', 's_customers', '{id}', as_of => '2024-07-21');
RESET ROLE;
DROP VIEW s_hist_v;
DROP TABLE s_customers, s_hist, s_before, s_broken, s_region, s_events, s_feed, s_part, s_src, s_del, s_inf;
DROP ROLE s_etl;

-- Two conventions for "current" (issue 42): a history prepared with
-- valid_to_current => 'infinity' (dbt's dbt_valid_to_current) and a call
-- that forgets the option. 0.8.0's HINT said to prepare an index WHERE
-- valid_to IS NULL; following it, the next snapshot gave every key a second
-- current version. Now the error names the index and the option, and no
-- sequence of calls makes a second convention.
CREATE TABLE s_conv_src (id int PRIMARY KEY, name text);
INSERT INTO s_conv_src VALUES (1, 'Ada'), (2, 'Bo');
CREATE TABLE s_inf (id int NOT NULL, name text, valid_from timestamptz NOT NULL, valid_to timestamptz NOT NULL);
SELECT idem.snapshot_prepare('s_inf', '{id}', valid_to_current => 'infinity') IS NOT NULL AS prepared;
SELECT inserted FROM idem.snapshot('s_inf', 's_conv_src', '{id}', as_of => '2024-07-01', valid_to_current => 'infinity');
-- The forgotten option: the error says which to pass.
SELECT show_error($$SELECT * FROM idem.snapshot('s_inf', 's_conv_src', '{id}')$$);
-- The HINT of 0.8.0, followed: refused (an index under the other convention
-- exists), and the table holds versions current under it anyway.
SELECT show_error($$SELECT idem.snapshot_prepare('s_inf', '{id}')$$);
-- Another value than the table's: refused the same way.
SELECT show_error($$SELECT * FROM idem.snapshot('s_inf', 's_conv_src', '{id}', valid_to_current => '9999-12-31')$$);
SELECT show_error($$SELECT idem.snapshot_prepare('s_inf', '{id}', valid_to_current => '9999-12-31')$$);
-- Rows written by hand under the other convention, no index yet: prepare
-- refuses in both directions.
CREATE TABLE s_hand_null (id int NOT NULL, valid_from timestamptz NOT NULL, valid_to timestamptz);
INSERT INTO s_hand_null VALUES (1, '2024-07-01', NULL);
SELECT show_error($$SELECT idem.snapshot_prepare('s_hand_null', '{id}', valid_to_current => 'infinity')$$);
CREATE TABLE s_hand_inf (id int NOT NULL, valid_from timestamptz NOT NULL, valid_to timestamptz);
INSERT INTO s_hand_inf VALUES (1, '2024-07-01', 'infinity');
SELECT show_error($$SELECT idem.snapshot_prepare('s_hand_inf', '{id}')$$);
-- Both indexes made by hand: idem.snapshot refuses to run beside the
-- other convention's, whichever the call's.
CREATE TABLE s_both (id int NOT NULL, name text, valid_from timestamptz NOT NULL, valid_to timestamptz);
CREATE UNIQUE INDEX ON s_both (id) WHERE valid_to IS NULL;
CREATE UNIQUE INDEX ON s_both (id) WHERE valid_to = 'infinity';
SELECT show_error($$SELECT * FROM idem.snapshot('s_both', 's_conv_src', '{id}', as_of => '2024-07-01')$$);
SELECT show_error($$SELECT * FROM idem.snapshot('s_both', 's_conv_src', '{id}', as_of => '2024-07-01', valid_to_current => 'infinity')$$);
-- Rows written by hand under the other convention after prepare: a key
-- that has one is refused, whichever the call's convention; the keys it
-- already tracks are not affected.
CREATE TABLE s_hand_after (id int NOT NULL, name text, valid_from timestamptz NOT NULL, valid_to timestamptz);
SELECT idem.snapshot_prepare('s_hand_after', '{id}') IS NOT NULL AS prepared;
SELECT inserted FROM idem.snapshot('s_hand_after', 's_conv_src', '{id}', as_of => '2024-07-01');
INSERT INTO s_hand_after VALUES (3, 'Cy', '2024-07-01', 'infinity');
INSERT INTO s_conv_src VALUES (3, 'Cy');
SELECT show_error($$SELECT * FROM idem.snapshot('s_hand_after', 's_conv_src', '{id}', as_of => '2024-07-02')$$);
ALTER TABLE s_inf ALTER COLUMN valid_to DROP NOT NULL;
INSERT INTO s_inf VALUES (3, 'Cy', '2024-07-01', NULL);
SELECT show_error($$SELECT * FROM idem.snapshot('s_inf', 's_conv_src', '{id}', as_of => '2024-07-02', valid_to_current => 'infinity')$$);
DELETE FROM s_conv_src WHERE id = 3;
SELECT count(*) AS keys_with_two_current FROM (SELECT id FROM s_hand_after WHERE valid_to = 'infinity' OR valid_to IS NULL GROUP BY id HAVING count(*) > 1) k;
-- With the right option the history stays whole: one current version per key.
SELECT inserted, unchanged FROM idem.snapshot('s_inf', 's_conv_src', '{id}', as_of => '2024-07-02', valid_to_current => 'infinity');
SELECT count(*) AS keys_with_two_current FROM (SELECT id FROM s_inf WHERE valid_to = 'infinity' OR valid_to IS NULL GROUP BY id HAVING count(*) > 1) k;
