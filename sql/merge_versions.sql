-- Late data and deletes: version_column, delete_column, tombstones.
CREATE TABLE v_target (id int PRIMARY KEY, v bigint NOT NULL, payload text);
INSERT INTO v_target VALUES (1, 10, 'one@10'), (2, 10, 'two@10'), (3, 10, 'three@10');

-- An older row is stale (never applied); the same version with the same
-- content is unchanged; a newer one wins.
SELECT * FROM idem.merge_query('v_target',
  $$SELECT * FROM (VALUES (1, 9, 'one@9'), (2, 10, 'two@10'), (3, 11, 'three@11'), (4, 1, 'four@1')) s(id, v, payload)$$,
  version_column => 'v');
SELECT * FROM v_target ORDER BY id;
-- Replaying the same late batch changes nothing.
SELECT * FROM idem.merge_query('v_target',
  $$SELECT * FROM (VALUES (1, 9, 'one@9'), (2, 10, 'two@10'), (3, 11, 'three@11'), (4, 1, 'four@1')) s(id, v, payload)$$,
  version_column => 'v');

-- Same version, different content: the source changed without a new
-- version. Loud, naming the key, and nothing is written.
SELECT show_error($$SELECT * FROM idem.merge_query('v_target',
  'SELECT * FROM (VALUES (2, 10, ''two@10 but different''), (5, 1, ''five'')) s(id, v, payload)', version_column => 'v')$$);
SELECT count(*) AS five_not_inserted FROM v_target WHERE id = 5;

-- Duplicates in the source: the highest version wins...
SELECT * FROM idem.merge_query('v_target',
  $$SELECT * FROM (VALUES (1, 12, 'one@12'), (1, 13, 'one@13'), (1, 11, 'one@11')) s(id, v, payload)$$,
  version_column => 'v');
SELECT payload FROM v_target WHERE id = 1;
-- ...unless differing rows share the highest version.
SELECT show_error($$SELECT * FROM idem.merge_query('v_target',
  'SELECT * FROM (VALUES (1, 14, ''a''), (1, 14, ''b''), (1, 2, ''c'')) s(id, v, payload)', version_column => 'v')$$);
-- Without a version column, differing duplicates are an error naming the key
-- (never the raw "cannot affect row a second time"); identical ones collapse.
SELECT show_error($$SELECT * FROM idem.merge_query('v_target',
  'SELECT * FROM (VALUES (3, 20, ''x''), (3, 20, ''y'')) s(id, v, payload)')$$);
SELECT * FROM idem.merge_query('v_target',
  $$SELECT * FROM (VALUES (3, 20, 'x'), (3, 20, 'x')) s(id, v, payload)$$);
-- A NULL version: 23502 with the count.
SELECT show_error($$SELECT * FROM idem.merge_query('v_target',
  'SELECT * FROM (VALUES (1, NULL::bigint, ''x''), (2, NULL, ''y'')) s(id, v, payload)', version_column => 'v')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('v_target', 'SELECT 1 AS id, 1 AS payload', version_column => 'v')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('v_target', 'SELECT 1 AS id, 1 AS v, 1 AS w', version_column => 'w', columns => '{v}')$$);

-- Deletes with versions leave tombstones: a late, older row cannot bring
-- the key back; a newer one can.
CREATE TABLE events (id int PRIMARY KEY, v timestamptz NOT NULL, state text);
INSERT INTO events VALUES (1, '2024-07-07 10:00+00', 'open'), (2, '2024-07-07 10:00+00', 'open');
SELECT * FROM idem.merge_query('events',
  $$SELECT 1 AS id, '2024-07-07 12:00+00'::timestamptz AS v, NULL::text AS state, true AS deleted$$,
  version_column => 'v', delete_column => 'deleted');
SELECT id, state FROM events ORDER BY id;
SELECT key_data, version FROM idem.tombstones WHERE target = 'events'::regclass;
-- The late update from 11:00 arrives after the delete from 12:00: stale.
SET TimeZone = 'America/New_York';   -- versions compare as timestamptz, not as text
SELECT * FROM idem.merge_query('events',
  $$SELECT 1 AS id, '2024-07-07 11:00+00'::timestamptz AS v, 'late' AS state, false AS deleted$$,
  version_column => 'v', delete_column => 'deleted');
RESET TimeZone;
SELECT count(*) AS resurrected FROM events WHERE id = 1;
-- A delete that arrives for a key never seen leaves a tombstone too, so
-- that its own late insert is stale.
SELECT * FROM idem.merge_query('events',
  $$SELECT 3 AS id, '2024-07-07 12:00+00'::timestamptz AS v, NULL::text AS state, true AS deleted$$,
  version_column => 'v', delete_column => 'deleted');
SELECT * FROM idem.merge_query('events',
  $$SELECT 3 AS id, '2024-07-07 09:00+00'::timestamptz AS v, 'late insert' AS state, false AS deleted$$,
  version_column => 'v', delete_column => 'deleted');
-- A newer row brings the key back.
SELECT * FROM idem.merge_query('events',
  $$SELECT 1 AS id, '2024-07-07 13:00+00'::timestamptz AS v, 'reopened' AS state, false AS deleted$$,
  version_column => 'v', delete_column => 'deleted');
SELECT id, state FROM events ORDER BY id;
-- An older delete is stale; the delete column itself is never written.
SELECT * FROM idem.merge_query('events',
  $$SELECT 2 AS id, '2024-07-07 09:00+00'::timestamptz AS v, NULL::text AS state, true AS deleted$$,
  version_column => 'v', delete_column => 'deleted');
SELECT id, state FROM events ORDER BY id;
-- Replaying a batch of deletes is a no-op.
SELECT * FROM idem.merge_query('events',
  $$SELECT 3 AS id, '2024-07-07 12:00+00'::timestamptz AS v, NULL::text AS state, true AS deleted$$,
  version_column => 'v', delete_column => 'deleted');

-- purge_tombstones forgets tombstones older than the given age.
SELECT idem.purge_tombstones('events', '1 hour') AS purged_recent;
UPDATE idem.tombstones SET deleted_at = deleted_at - interval '2 days' WHERE target = 'events'::regclass;
SELECT idem.purge_tombstones('events', '1 day') AS purged_old;
SELECT count(*) AS tombstones_left FROM idem.tombstones WHERE target = 'events'::regclass;
SELECT show_error($$SELECT idem.purge_tombstones(NULL, '1 day')$$);

-- Without a version column a delete is a plain delete.
SELECT * FROM idem.merge_query('v_target', $$SELECT 4 AS id, 0 AS v, '' AS payload, true AS gone$$,
                               delete_column => 'gone');
SELECT count(*) AS four_deleted FROM v_target WHERE id = 4;
SELECT * FROM idem.merge_query('v_target', $$SELECT 4 AS id, 0 AS v, '' AS payload, true AS gone$$,
                               delete_column => 'gone');
SELECT show_error($$SELECT * FROM idem.merge_query('v_target', 'SELECT 4 AS id, 0 AS v, 1 AS gone', delete_column => 'gone')$$);

-- Tombstones go with the target's privileges: a role that may not DELETE from
-- it cannot record one (a clear permission error, nothing written); one that
-- may, needs no grant of idem's.
CREATE ROLE v_etl;
GRANT SELECT, INSERT, UPDATE ON events TO v_etl;
SET ROLE v_etl;
SELECT show_error($$SELECT * FROM idem.merge_query('events',
  'SELECT 2 AS id, ''2024-07-08 00:00+00''::timestamptz AS v, NULL::text AS state, true AS deleted',
  version_column => 'v', delete_column => 'deleted')$$);
SELECT show_error($$SELECT idem._tombstones_put('events', ARRAY[gen_random_uuid()], ARRAY['{}'::jsonb], ARRAY['1'])$$);
SELECT show_error($$SELECT idem.purge_tombstones('events', '0 seconds')$$);
RESET ROLE;
GRANT DELETE ON events TO v_etl;
SET ROLE v_etl;
SELECT * FROM idem.merge_query('events',
  $$SELECT 2 AS id, '2024-07-08 00:00+00'::timestamptz AS v, NULL::text AS state, true AS deleted$$,
  version_column => 'v', delete_column => 'deleted');
SELECT show_error($$SELECT * FROM idem.tombstones$$);
RESET ROLE;
REVOKE ALL ON events FROM v_etl;
DROP ROLE v_etl;
SELECT id, state FROM events ORDER BY id;

-- Dropping a merge target drops its tombstones (sql_drop event trigger).
CREATE TABLE dropped_target (id int PRIMARY KEY, v int NOT NULL);
SELECT * FROM idem.merge_query('dropped_target', 'SELECT 1 AS id, 5 AS v, true AS gone',
                               version_column => 'v', delete_column => 'gone');
SELECT count(*) AS tombstones_before FROM idem.tombstones WHERE target = 'dropped_target'::regclass;
SELECT 'dropped_target'::regclass::oid AS dropped_oid \gset
DROP TABLE dropped_target;
SELECT count(*) AS tombstones_after FROM idem.tombstones WHERE target::oid = :dropped_oid;
