-- idem.merge and idem.merge_query on Citus (issue 25): a hash-distributed
-- target whose key holds the distribution column, from a local table, a
-- reference table, a colocated distributed table and a query; inserts,
-- updates, deletes (delete_missing with and without scope), versions and
-- tombstones, dry_run, the counts, and replays that write nothing on any
-- shard. A first load runs the whole statement (no INSERT ... ON CONFLICT
-- of its own: Citus refuses a volatile function in ON CONFLICT ... WHERE).
SET citus.shard_count = 4;
SET client_min_messages = warning;

-- A replay's check: every row's xmin and ctid on every shard, before and
-- after (run_command_on_shards runs the query on each shard).
CREATE TABLE orders (id bigint PRIMARY KEY, status text, amount numeric(12,2));
SELECT create_distributed_table('orders', 'id');
CREATE TABLE batch (id bigint, status text, amount numeric(12,2));
INSERT INTO batch SELECT g, 'new', g FROM generate_series(1, 100) g;

-- First load into an empty distributed target, then its replay.
SELECT * FROM idem.merge('orders', 'batch');
SELECT (SELECT string_agg(result, ',' ORDER BY shardid) FROM run_command_on_shards('orders',
        'SELECT string_agg(xmin::text || ctid::text, '','' ORDER BY id) FROM %s')) AS before \gset
SELECT * FROM idem.merge('orders', 'batch');
SELECT (SELECT string_agg(result, ',' ORDER BY shardid) FROM run_command_on_shards('orders',
        'SELECT string_agg(xmin::text || ctid::text, '','' ORDER BY id) FROM %s')) = :'before' AS replay_wrote_nothing;

-- Changes: 10 updated, 1 new; a repeated identical row collapses.
UPDATE batch SET status = 'paid' WHERE id <= 10;
INSERT INTO batch VALUES (101, 'new', 101), (101, 'new', 101);
SELECT * FROM idem.merge('orders', 'batch', dry_run => true);
SELECT * FROM idem.merge('orders', 'batch');
SELECT * FROM idem.merge('orders', 'batch');
SELECT status, count(*) FROM orders GROUP BY status ORDER BY status;

-- A repeated key with other content: 21000, nothing written on any shard.
INSERT INTO batch VALUES (7, 'other', 7);
SELECT * FROM idem.merge('orders', 'batch');
SELECT count(*) FILTER (WHERE status = 'other') AS other FROM orders;
DELETE FROM batch WHERE status = 'other';
-- NULL keys: 23502 with the count.
INSERT INTO batch VALUES (NULL, 'x', 1), (NULL, 'y', 2);
SELECT * FROM idem.merge('orders', 'batch');
DELETE FROM batch WHERE id IS NULL;

-- delete_missing, with and without scope.
DELETE FROM batch WHERE id > 95;
SELECT * FROM idem.merge('orders', 'batch', delete_missing => true, delete_scope => 'id > 98');
SELECT count(*) AS left_in_orders, max(id) FROM orders;
SELECT * FROM idem.merge('orders', 'batch', delete_missing => true);
SELECT count(*) AS left_in_orders, max(id) FROM orders;
SELECT * FROM idem.merge('orders', 'batch', delete_missing => true);

-- From a reference table.
CREATE TABLE ref_batch (id bigint, status text, amount numeric(12,2));
SELECT create_reference_table('ref_batch');
INSERT INTO ref_batch SELECT g, 'ref', g FROM generate_series(90, 110) g;
SELECT * FROM idem.merge('orders', 'ref_batch');
SELECT * FROM idem.merge('orders', 'ref_batch');

-- From a colocated distributed table, with and without a primary key.
CREATE TABLE dist_batch (id bigint, status text, amount numeric(12,2));
SELECT create_distributed_table('dist_batch', 'id', colocate_with => 'orders');
INSERT INTO dist_batch SELECT g, 'dist', g FROM generate_series(100, 130) g;
INSERT INTO dist_batch VALUES (100, 'dist', 100);
SELECT * FROM idem.merge('orders', 'dist_batch');
SELECT * FROM idem.merge('orders', 'dist_batch');
CREATE TABLE pk_batch (id bigint PRIMARY KEY, status text, amount numeric(12,2));
SELECT create_distributed_table('pk_batch', 'id', colocate_with => 'orders');
INSERT INTO pk_batch SELECT id, CASE WHEN id % 10 = 0 THEN 'pk' ELSE status END, amount FROM orders;
INSERT INTO pk_batch VALUES (500, 'pk', 500);
SELECT * FROM idem.merge('orders', 'pk_batch');
SELECT * FROM idem.merge('orders', 'pk_batch');

-- From a query.
SELECT * FROM idem.merge_query('orders', 'SELECT id, ''query'' AS status, amount FROM orders WHERE id BETWEEN 1 AND 5');
SELECT * FROM idem.merge_query('orders', 'SELECT id, ''query'' AS status, amount FROM orders WHERE id BETWEEN 1 AND 5');
SELECT status, count(*) FROM orders GROUP BY status ORDER BY status;
-- The same rows as a plain table merged the same way would hold.
SELECT idem.checksum('orders') = idem.checksum_query('SELECT id, status, amount FROM orders') AS checksum_consistent;

-- Versions and tombstones.
CREATE TABLE vt (id bigint PRIMARY KEY, v int, payload text);
SELECT create_distributed_table('vt', 'id');
SELECT * FROM idem.merge_query('vt', 'SELECT * FROM (VALUES (1::bigint, 1, ''a''), (2, 1, ''b''), (2, 2, ''b2'')) s(id, v, payload)', version_column => 'v');
SELECT * FROM idem.merge_query('vt', 'SELECT * FROM (VALUES (1::bigint, 0, ''old'')) s(id, v, payload)', version_column => 'v');
SELECT * FROM idem.merge_query('vt', 'SELECT * FROM (VALUES (1::bigint, 5, ''x'', true)) s(id, v, payload, del)', version_column => 'v', delete_column => 'del');
-- An older row does not bring the deleted key back (its tombstone).
SELECT * FROM idem.merge_query('vt', 'SELECT * FROM (VALUES (1::bigint, 4, ''back'', false)) s(id, v, payload, del)', version_column => 'v', delete_column => 'del');
SELECT * FROM vt ORDER BY id;

-- A composite key holding the distribution column; a key without it is
-- refused before anything else, naming the column.
CREATE TABLE regional (region text, id bigint, v int, PRIMARY KEY (region, id));
SELECT create_distributed_table('regional', 'region');
SELECT * FROM idem.merge_query('regional', 'SELECT ''eu''::text AS region, 1::bigint AS id, 5 AS v');
SELECT * FROM idem.merge_query('regional', 'SELECT ''eu''::text AS region, 1::bigint AS id, 6 AS v', key => '{id}');
SELECT * FROM regional;

-- A reference table and a Citus local table as targets.
CREATE TABLE ref_target (id bigint PRIMARY KEY, v text);
SELECT create_reference_table('ref_target');
SELECT * FROM idem.merge_query('ref_target', 'SELECT g::bigint AS id, ''r'' || g AS v FROM generate_series(1, 5) g');
SELECT * FROM idem.merge_query('ref_target', 'SELECT g::bigint AS id, ''r'' || g AS v FROM generate_series(1, 5) g');
CREATE TABLE local_target (id bigint PRIMARY KEY, v text);
SELECT citus_add_local_table_to_metadata('local_target');
SELECT * FROM idem.merge_query('local_target', 'SELECT g::bigint AS id, ''l'' || g AS v FROM generate_series(1, 5) g');
SELECT * FROM idem.merge_query('local_target', 'SELECT g::bigint AS id, ''l'' || g AS v FROM generate_series(1, 5) g');

-- The run history records each merge on the coordinator.
SELECT function_name, target, counts->>'inserted' AS inserted FROM idem.run_log
 WHERE target = 'public.regional' ORDER BY started_at;
