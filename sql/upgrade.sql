-- ALTER EXTENSION pg_idempotent UPDATE from each released version (0.1.0,
-- 0.2.0, 0.3.0, 0.4.0) to the current one keeps every piece of state, and the result is
-- the same extension a fresh CREATE EXTENSION gives. In databases of its own, so the
-- other tests' objects stay out of it.
CREATE DATABASE idem_upgrade_fresh;
CREATE DATABASE idem_upgrade_old;
\c idem_upgrade_fresh
CREATE EXTENSION pg_idempotent;
-- The fresh install's objects, carried to the other database in a psql variable.
SELECT string_agg(pg_describe_object(classid, objid, objsubid), E'\n') AS fresh_objects FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   -- A table's row type (and its array type) goes with the table: on 18 it
   -- is a member of its own; leave it out, so every major lists the same.
   AND NOT (classid = 'pg_type'::regclass AND EXISTS (
         SELECT FROM pg_type t LEFT JOIN pg_type e ON e.oid = t.typelem
          WHERE t.oid = objid AND (t.typrelid <> 0 OR e.typrelid <> 0)))
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_idempotent') \gset
-- And each object's definition (functions' text and privileges, tables'
-- columns, defaults, constraints, indexes, triggers and policies, views'
-- queries, comments; privileges of PUBLIC and the owner: 0.1.0's grant_usage
-- granted the tombstone functions to each role, which stays with the data
-- a database holds), as a digest per object: the fresh install runs the
-- full install script pg_idempotent--<version>.sql, the other database the
-- chain of upgrade scripts from 0.1.0 (pg_dump --schema-only would show
-- neither: it dumps an extension as its CREATE EXTENSION).
-- (pg_regress feeds this file to psql on stdin: \i is relative to the tree's
-- root, where every suite runs it.)
\set definitions fresh_definitions
\i sql/catalog_definitions.psql
\c idem_upgrade_old
CREATE EXTENSION pg_idempotent VERSION '0.1.0';
SELECT extversion FROM pg_extension WHERE extname = 'pg_idempotent';
SELECT count(*) AS swap_partition_before FROM pg_proc WHERE proname = 'swap_partition';
-- State in every family's tables.
CREATE TABLE sales (id int PRIMARY KEY, amount numeric, v int, deleted boolean DEFAULT false);
SELECT * FROM idem.merge_query('sales', 'SELECT 1 AS id, 10::numeric AS amount, 1 AS v, false AS deleted UNION ALL SELECT 2, 20, 1, false',
                               '{id}', version_column => 'v', delete_column => 'deleted');
SELECT * FROM idem.merge_query('sales', 'SELECT 2 AS id, 20::numeric AS amount, 2 AS v, true AS deleted',
                               '{id}', version_column => 'v', delete_column => 'deleted');
BEGIN;
SELECT idem.claim('evt-1', 'webhooks', 'body-a');
SELECT idem.complete('evt-1', '{"order": 7}'::jsonb, 'webhooks');
COMMIT;
-- A key longer than 512 bytes and one that starts with U+0001: 0.8.0 keeps
-- them as digests in the primary key (core/key_id.hpp), every other key as
-- itself.
SELECT idem.claim(repeat('long-', 200), 'webhooks') AS long_key_at_0_1_0,
       idem.claim(chr(1) || 'marked', 'webhooks') AS marked_key_at_0_1_0;
SELECT idem.advance('nightly', '2024-07-08'::date);
SELECT idem.rewind('nightly', '2024-07-07'::date);
SELECT idem.mark_window('nightly', '2024-07-07'::date, '2024-07-08'::date);
SELECT idem.publish('public.report', 'SELECT 1 AS n');
CREATE ROLE idem_upgrade_etl;
SELECT idem.grant_usage('idem_upgrade_etl', 'webhooks');
-- 0.6.0 matched a dataset grant against schema.view as written.
SELECT idem.grant_usage('idem_upgrade_etl', 'Public.Report');
-- Each state table's rows as a query: 0.7.0 adds columns to datasets (the
-- view and the registered owner) and names each grant's kind (an old grant
-- of a scope becomes one per kind: its keys' rows hold it as it was), so
-- those two compare what they held before.
CREATE TABLE before_update (state text, query text, checksum text, query_after text);
INSERT INTO before_update (state, query) VALUES
  ('keys', 'SELECT * FROM idem.keys'),
  ('tombstones', 'SELECT * FROM idem.tombstones'),
  ('checkpoints', 'SELECT * FROM idem.checkpoints'),
  ('checkpoint_log', 'SELECT * FROM idem.checkpoint_log'),
  ('windows', 'SELECT * FROM idem.windows'),
  ('datasets', 'SELECT schema_name, view_name, current_version, next_version, flipped_at FROM idem.datasets'),
  ('dataset_versions', 'SELECT * FROM idem.dataset_versions'),
  ('usage_grants', 'SELECT role, scope FROM idem.usage_grants');
UPDATE before_update SET query_after = 'SELECT role, scope FROM idem.usage_grants WHERE kind = ''keys'''
 WHERE state = 'usage_grants';
-- 0.8.0 adds the fencing token to idem.keys and keys it by (scope, key)
-- instead of (scope, md5(key)::uuid), a long key's text in long_key: the
-- keys compare the columns they had, key_hash computed as it was (the scope
-- 'leases' is claimed later, at 0.7.0).
UPDATE before_update SET query_after = 'SELECT scope, md5(COALESCE(long_key, key))::uuid AS key_hash, '
  'COALESCE(long_key, key) AS key, fingerprint, state, result, recovery_point, '
  'lease, claimed_at, completed_at, lease_until, claimed_by FROM idem.keys WHERE scope <> ''leases'''
 WHERE state = 'keys';
-- 0.9.0 adds row_sample to idem.dataset_versions (NULL for a version
-- published before): the versions compare the columns they had.
UPDATE before_update SET query_after = 'SELECT schema_name, view_name, version, relation, row_count, checksum, '
  'created_at, pinned FROM idem.dataset_versions'
 WHERE state = 'dataset_versions';
UPDATE before_update SET checksum = idem.checksum_query(query);

-- One release at a time. At 0.2.0 the module is already the newest: it works
-- on the older SQL objects, without a history table, and records nothing
-- (a package upgrade comes before ALTER EXTENSION ... UPDATE).
ALTER EXTENSION pg_idempotent UPDATE TO '0.2.0';
SELECT extversion FROM pg_extension WHERE extname = 'pg_idempotent';
SELECT to_regclass('idem.run_log') IS NULL AS no_history_table_yet;
SELECT * FROM idem.merge_query('sales', 'SELECT 1 AS id, 10::numeric AS amount, 1 AS v, false AS deleted', '{id}',
                               version_column => 'v', delete_column => 'deleted') AS unchanged_at_0_2_0;
-- At 0.3.0 the module is newer again: without the aggregate idem._digest_agg
-- (0.4.0), checksums and overwrite's comparison use the digest receiver,
-- which gives the same text.
ALTER EXTENSION pg_idempotent UPDATE TO '0.3.0';
SELECT to_regprocedure('idem._digest_agg("any")') IS NULL AS no_digest_aggregate_yet;
CREATE TABLE ow (day date NOT NULL, n int) PARTITION BY RANGE (day);
CREATE TABLE ow_0707 PARTITION OF ow FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
SELECT * FROM idem.overwrite_partition('ow', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g FROM generate_series(1, 5) g');
SELECT * FROM idem.overwrite_partition('ow', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g FROM generate_series(1, 5) g');
SELECT idem.checksum('sales') AS sales_checksum_at_0_3_0 \gset
-- At 0.4.0 the module is newer again: idem.written_units has no columns for
-- the query's preimage (0.5.0) yet; records are kept and trusted without.
ALTER EXTENSION pg_idempotent UPDATE TO '0.4.0';
SELECT count(*) AS preimage_columns_yet FROM pg_attribute
 WHERE attrelid = 'idem.written_units'::regclass AND attname IN ('query_shape', 'query_digest');
SELECT * FROM idem.overwrite_partition('ow', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g FROM generate_series(1, 6) g');
SELECT row_count AS recorded_at_0_4_0 FROM idem.written_units WHERE relid = 'ow_0707'::regclass;
SELECT * FROM idem.overwrite_partition('ow', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g FROM generate_series(1, 6) g');
-- At 0.5.0 the module is newer again: the record keeps the query's
-- preimage but has no column for the sample of its rows (0.6.0); the
-- preimage is checked without one.
ALTER EXTENSION pg_idempotent UPDATE TO '0.5.0';
-- The aggregate gives the receiver's text: the same checksum, and the rerun
-- is still recognized.
SELECT idem.checksum('sales') = :'sales_checksum_at_0_3_0' AS same_checksum_after_update;
SELECT * FROM idem.overwrite_partition('ow', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g FROM generate_series(1, 6) g');
-- The 0.4.0 record (no preimage) still holds; the next write keeps one.
SELECT query_digest IS NULL AS no_preimage_in_the_0_4_0_record FROM idem.written_units WHERE relid = 'ow_0707'::regclass;
SELECT * FROM idem.overwrite_partition('ow', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g FROM generate_series(1, 7) g');
SELECT query_digest = idem.checksum_query('SELECT ''2024-07-07''::date, g FROM generate_series(1, 7) g') AS preimage_kept
  FROM idem.written_units WHERE relid = 'ow_0707'::regclass;
SELECT count(*) AS sample_column_yet FROM pg_attribute
 WHERE attrelid = 'idem.written_units'::regclass AND attname = 'query_sample';
SELECT * FROM idem.overwrite_partition('ow', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g FROM generate_series(1, 7) g');
-- A swap that detaches (swap_partition, overwrite_partition with keep_old)
-- carries the partition's grants, policies and comments over with functions
-- of 0.8.0's SQL: before the update it is refused, clearly, and changes
-- nothing. (A swap without keep_old keeps the partition and needs none.)
CREATE TABLE ow_stage (LIKE ow);
SELECT idem.swap_partition('ow_0707', 'ow_stage');
SELECT * FROM idem.overwrite_partition('ow', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, 1', mode => 'swap', keep_old => true);
SELECT count(*) AS rows_kept FROM ow_0707;
DROP TABLE ow_stage;
-- Before 0.8.0's SQL a lease has no token: a leased claim, save_point and
-- key_status work as at 0.7.0 (seven columns), claim_lease does not exist.
SELECT idem.claim('export-1', 'leases', lease => '1 hour') AS leased_at_0_7_0;
SELECT idem.save_point('export-1', 'page 3', 'leases');
SELECT * FROM idem.key_status('export-1', 'leases') \gset st_
SELECT :'st_state' AS state, :'st_recovery_point' AS recovery_point;
SELECT to_regprocedure('idem.claim_lease(text, text, interval, text, boolean)') IS NULL AS no_claim_lease_yet;
ALTER EXTENSION pg_idempotent UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_idempotent';
-- The 0.5.0 record (a preimage, no sample) still holds; the next write keeps
-- a sample too.
SELECT query_sample IS NULL AS no_sample_in_the_0_5_0_record FROM idem.written_units WHERE relid = 'ow_0707'::regclass;
SELECT * FROM idem.overwrite_partition('ow', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g FROM generate_series(1, 7) g');
SELECT * FROM idem.overwrite_partition('ow', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g FROM generate_series(1, 8) g');
-- (Its sample: the modulus, 16, then the rows of its bucket, 8 bytes each.)
SELECT query_digest = idem.checksum_query('SELECT ''2024-07-07''::date, g FROM generate_series(1, 8) g') AS preimage_kept,
       get_byte(query_sample, 0) AS sample_modulus, length(query_sample) % 8 = 0 AS sample_whole_entries
  FROM idem.written_units WHERE relid = 'ow_0707'::regclass;
SELECT * FROM idem.overwrite_partition('ow', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, g FROM generate_series(1, 8) g');
-- Every state table reads back exactly as before (and is not empty).
SELECT b.state, b.checksum = idem.checksum_query(coalesce(b.query_after, b.query)) AS unchanged,
       split_part(b.checksum, ':', 2) AS rows
  FROM before_update b ORDER BY 1;
-- 0.7.0: the scope grant of 0.6.0 now names what it gave (keys and the job;
-- 'webhooks' is no schema.view), the dataset knows its view and its owner.
SELECT role::text, kind, scope FROM idem.usage_grants ORDER BY kind, scope COLLATE "C";
-- 0.8.0: the grants' rows are in idem.usage_grant_rows; idem.usage_grants
-- is a view of those of existing roles.
SELECT count(*) AS grant_rows FROM idem.usage_grant_rows WHERE role = 'idem_upgrade_etl'::regrole;
-- 0.8.0: the lease taken at 0.7.0 got a fencing token at the update; its
-- worker goes on without one, or with the one key_status shows; a new
-- leased claim draws a larger one.
SELECT state, recovery_point, token IS NOT NULL AS has_token FROM idem.key_status('export-1', 'leases');
-- The keys of 0.1.0 are found after the migration: a replay is a duplicate.
SELECT idem.claim('evt-1', 'webhooks', 'body-a') AS evt_1_again, idem.claim(repeat('long-', 200), 'webhooks') AS long_key_again,
       idem.claim(chr(1) || 'marked', 'webhooks') AS marked_key_again;
SELECT count(*) FILTER (WHERE long_key IS NULL) AS inline_keys, count(*) FILTER (WHERE long_key IS NOT NULL) AS digest_keys
  FROM idem.keys WHERE scope = 'webhooks';
SELECT token AS export_1_token FROM idem.key_status('export-1', 'leases') \gset
SELECT idem.save_point('export-1', 'page 4', 'leases');
SELECT idem.save_point('export-1', 'page 5', 'leases', :export_1_token);
SELECT idem.claim_lease('export-2', 'leases', '1 hour') > :export_1_token AS larger_token;
SELECT idem.complete('export-1', '{"pages": 5}', 'leases', :export_1_token);
SELECT view_name, view_relid = 'public.report'::regclass AS view_recorded, owner::text FROM idem.datasets;
-- The state still works: the key is done, the checkpoint and the tombstone hold.
SELECT idem.claim('evt-1', 'webhooks', 'body-a') AS claimed_again, idem.result('evt-1', 'webhooks');
SELECT idem.watermark('nightly');
SELECT * FROM idem.merge_query('sales', 'SELECT 2 AS id, 20::numeric AS amount, 1 AS v, false AS deleted', '{id}',
                               version_column => 'v', delete_column => 'deleted') AS late_row_stays_deleted;
-- The new function works on the upgraded extension.
CREATE TABLE p (day date NOT NULL, n int) PARTITION BY RANGE (day);
CREATE TABLE p_0707 PARTITION OF p FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE p_stage (LIKE p);
INSERT INTO p_stage VALUES ('2024-07-07', 1);
SELECT idem.swap_partition('p_0707', 'p_stage');
-- The run history starts with 0.3.0: the runs from then on, none before.
SELECT function_name, target, action, counts FROM idem.run_history ORDER BY id;
-- The same objects as a fresh install, no more and no less.
WITH now_objects AS (
  SELECT pg_describe_object(classid, objid, objsubid) AS object FROM pg_depend
   WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   -- A table's row type (and its array type) goes with the table: on 18 it
   -- is a member of its own; leave it out, so every major lists the same.
   AND NOT (classid = 'pg_type'::regclass AND EXISTS (
         SELECT FROM pg_type t LEFT JOIN pg_type e ON e.oid = t.typelem
          WHERE t.oid = objid AND (t.typrelid <> 0 OR e.typrelid <> 0)))
     AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_idempotent')),
fresh AS (SELECT regexp_split_to_table(:'fresh_objects', E'\n') AS object)
SELECT 'only after the update' AS side, object FROM (SELECT object FROM now_objects EXCEPT SELECT object FROM fresh) a
UNION ALL SELECT 'only in a fresh install', object FROM (SELECT object FROM fresh EXCEPT SELECT object FROM now_objects) b
UNION ALL SELECT 'objects compared', count(*)::text FROM fresh;
-- The same definitions, object by object.
\set definitions now_definitions
\i sql/catalog_definitions.psql
WITH now_defs AS (SELECT regexp_split_to_table(:'now_definitions', E'\n') AS d),
fresh_defs AS (SELECT regexp_split_to_table(:'fresh_definitions', E'\n') AS d)
SELECT 'defined otherwise after the update' AS side, d FROM (SELECT d FROM now_defs EXCEPT SELECT d FROM fresh_defs) a
UNION ALL SELECT 'defined otherwise in a fresh install', d FROM (SELECT d FROM fresh_defs EXCEPT SELECT d FROM now_defs) b
UNION ALL SELECT 'definitions compared', count(*)::text FROM fresh_defs;
\c postgres
DROP DATABASE idem_upgrade_fresh;
DROP DATABASE idem_upgrade_old;
DROP ROLE idem_upgrade_etl;
