-- The security suite, third round (issue 41): hardening. Each block fails
-- on 0.8.0.

-- 1. idem.append checked SELECT and INSERT, but into a table with a unique
-- index on the key its statement's ON CONFLICT ... DO UPDATE (which updates
-- no row) needs UPDATE too: PostgreSQL's bare "permission denied" came
-- from the middle of the statement, only when the batch held an event the
-- table had. Now it is checked up front, with the extension's message.
CREATE ROLE hard_loader;
CREATE TABLE hard_events (id int PRIMARY KEY, payload text);
CREATE TABLE hard_batch (id int, payload text);
INSERT INTO hard_events VALUES (1, 'one');
INSERT INTO hard_batch VALUES (1, 'one'), (2, 'two');
GRANT SELECT, INSERT ON hard_events TO hard_loader;
GRANT SELECT ON hard_batch TO hard_loader;
SET ROLE hard_loader;
SELECT show_error($$SELECT * FROM idem.append('hard_events', 'hard_batch')$$);
RESET ROLE;
GRANT UPDATE ON hard_events TO hard_loader;
SET ROLE hard_loader;
SELECT * FROM idem.append('hard_events', 'hard_batch');
SELECT * FROM idem.append('hard_events', 'hard_batch');
RESET ROLE;
SELECT id, payload FROM hard_events ORDER BY id;

-- 2. idem.keys, shared by every granted role, had no size limits: a 20 MB
-- key and a 600,000-element result were stored. Keys and fingerprints stop
-- at 8 kB; results and recovery points at idem.max_result_size (1 MB by
-- default), which only a superuser can raise.
SELECT idem.grant_usage('hard_loader', 'hard_sizes', 'keys');
SET ROLE hard_loader;
SELECT show_error(format('SELECT idem.claim(%L, %L)', repeat('k', 8193), 'hard_sizes'));
SELECT idem.claim(repeat('k', 8192), 'hard_sizes') AS an_8_kb_key;
SELECT show_error(format('SELECT idem.claim(%L, %L, fingerprint => %L)', 'fp-1', 'hard_sizes', repeat('f', 8193)));
SELECT show_error(format('SELECT * FROM idem.claim_many(ARRAY[%L, %L], %L)', 'ok-1', repeat('k', 8193), 'hard_sizes'));
-- The limit is not the caller's to raise.
SELECT show_error($$SET idem.max_result_size = '10MB'$$);
SELECT show_error($$SELECT set_config('idem.max_result_size', '10MB', false)$$);
BEGIN;
SELECT idem.claim('big-1', 'hard_sizes');
SELECT show_error($$SELECT idem.complete('big-1', (SELECT jsonb_agg(g) FROM generate_series(1, 600000) g), 'hard_sizes')$$);
SELECT idem.complete('big-1', '{"status": "paid"}', 'hard_sizes');
COMMIT;
SELECT idem.result('big-1', 'hard_sizes');
SELECT idem.claim('big-2', 'hard_sizes', lease => '1 hour');
SELECT show_error(format('SELECT idem.save_point(%L, %L, %L)', 'big-2', repeat('r', 1024 * 1024 + 1), 'hard_sizes'));
SELECT show_error($$SELECT idem.once('big-3', 'SELECT g FROM generate_series(1, 600000) g', 'hard_sizes')$$);
RESET ROLE;
SELECT count(*) AS stored_keys FROM idem.keys WHERE scope = 'hard_sizes';
-- A superuser can raise the limit, for a session or the database.
SET idem.max_result_size = '64MB';
SHOW idem.max_result_size;
RESET idem.max_result_size;

-- 3. Tombstones (idem.tombstones, shared by every versioned merge) had no
-- size limit either: a deleted row's key and version stop at 8 kB each.
CREATE TABLE hard_docs (id text PRIMARY KEY, v int NOT NULL, body text);
SELECT show_error(format('SELECT * FROM idem.merge_query(%L, %L, version_column => %L, delete_column => %L)',
  'hard_docs', format('SELECT %L::text AS id, 1 AS v, NULL::text AS body, true AS deleted', repeat('d', 9000)),
  'v', 'deleted'));
SELECT count(*) AS tombstones FROM idem.tombstones WHERE target = 'hard_docs'::regclass;
SELECT deleted FROM idem.merge_query('hard_docs',
  $$SELECT 'doc-1'::text AS id, 1 AS v, NULL::text AS body, true AS deleted$$,
  version_column => 'v', delete_column => 'deleted');
SELECT count(*) AS tombstones FROM idem.tombstones WHERE target = 'hard_docs'::regclass;

-- 4. idem._tombstones shared its name with the array type of idem.tombstones:
-- idem._tombstones('public.x'), with an untyped literal, was read as a cast
-- to that type ("malformed array literal"). The function is
-- idem._tombstones_of now; the old name works for this release, with a
-- NOTICE, when its argument is typed.
SELECT key_digest IS NOT NULL AS has_digest, version FROM idem._tombstones_of('hard_docs');
SELECT count(*) AS old_name_still_works FROM idem._tombstones('hard_docs'::regclass);
SELECT show_error($$SELECT count(*) FROM idem._tombstones('hard_docs')$$);
