-- How merge and append find the keys a batch repeats (issue 24): one pass
-- over the batch collects each key's 64-bit hash (idem._repeat_hashes, from
-- the hash operator family of the key's equality), and only the keys whose
-- hash comes back are grouped exactly. Whatever path a batch takes (no
-- repeat; a few; too many to list; a key type without a hash function),
-- identical rows collapse and differing rows under one key are refused.

-- The aggregate: the hashes seen more than once, each once; NULLs skipped;
-- NULL (unknown) past 4096 repeated keys; internal to its aggregate.
SELECT cardinality(idem._repeat_hashes(hashint8extended(g % 10, 0))) AS ten_repeated,
       cardinality(idem._repeat_hashes(hashint8extended(g, 0))) AS none_repeated,
       cardinality(idem._repeat_hashes(NULLIF(hashint8extended(g % 2, 0), hashint8extended(0, 0)))) AS nulls_skipped,
       idem._repeat_hashes(hashint8extended(g % 5000, 0)) IS NULL AS too_many_unknown
  FROM generate_series(1, 10000) g;
SELECT idem._repeat_hashes(x) FROM (VALUES (NULL::bigint)) v(x);
SELECT idem._repeat_hashes(x, y) AS composite FROM (VALUES (1, 'a'), (1, 'b'), (2, 'a'), (1, 'a')) v(x, y);
SELECT show_error($$SELECT idem._repeat_hashes_final(NULL::internal)$$);
-- _key_hash: equal keys hash alike by their type's equality (1 and 1.0 as
-- numeric; citext below), a NULL column gives NULL, the column's position
-- counts.
SELECT idem._key_hash(1::numeric) = idem._key_hash(1.0::numeric) AS numeric_equal,
       idem._key_hash(1, NULL::int) IS NULL AS null_key,
       idem._key_hash(1, 2) <> idem._key_hash(2, 1) AS ordered;
-- _key_repeats: tops' filter, a key's hash among the repeated ones (every
-- key when they are unknown, no NULL key).
SELECT idem._key_repeats(NULL, 1) AS unknown_all,
       idem._key_repeats(ARRAY[idem._key_hash(1), idem._key_hash(7)], 7) AS listed,
       idem._key_repeats(ARRAY[idem._key_hash(1)], 2) AS not_listed,
       idem._key_repeats('{}', NULL::int) AS null_key;

CREATE TABLE rk_target (id bigint PRIMARY KEY, v text);
CREATE TABLE rk_batch (id bigint, v text);

-- No repeat.
INSERT INTO rk_batch SELECT g, 'v' || g FROM generate_series(1, 1000) g;
SELECT * FROM idem.merge('rk_target', 'rk_batch');
-- A few identical repeats collapse (into a target that is not empty:
-- the whole statement, not the first load).
INSERT INTO rk_batch SELECT g, 'v' || g FROM generate_series(1, 3) g;
INSERT INTO rk_batch VALUES (1001, 'new'), (1001, 'new');
SELECT * FROM idem.merge('rk_target', 'rk_batch');
-- One key repeated with other content: 21000 naming it, nothing written.
INSERT INTO rk_batch VALUES (7, 'other'), (1002, 'new');
SELECT show_error($$SELECT * FROM idem.merge('rk_target', 'rk_batch')$$);
SELECT count(*) AS rk_rows, count(*) FILTER (WHERE v = 'other') AS other FROM rk_target;
-- 5000 keys twice each (more repeated keys than the finder lists): every
-- row is grouped, with the same result.
TRUNCATE rk_batch;
INSERT INTO rk_batch SELECT g, 'v' || g FROM generate_series(1, 5000) g, generate_series(1, 2);
SELECT * FROM idem.merge('rk_target', 'rk_batch');
UPDATE rk_batch SET v = 'late' WHERE id = 4321 AND ctid = (SELECT max(ctid) FROM rk_batch WHERE id = 4321);
SELECT show_error($$SELECT * FROM idem.merge('rk_target', 'rk_batch')$$);
SELECT count(*) AS rk_rows, count(DISTINCT id) AS rk_keys FROM rk_target;

-- Keys equal by their type's equality but not byte for byte (citext): their
-- hashes are equal too, so the repeat is found.
CREATE EXTENSION IF NOT EXISTS citext;
CREATE TABLE rk_ci (email citext PRIMARY KEY, name text);
INSERT INTO rk_ci VALUES ('zoe@example.com', 'Zoe');
-- (Which spelling the message names depends on the grouping's order: lower.)
SELECT lower(show_error($$SELECT * FROM idem.merge_query('rk_ci',
  'SELECT * FROM (VALUES (''ann@example.com''::citext, ''Ann''), (''ANN@example.COM'', ''Ann'')) AS s(email, name)')$$)) AS error;
SELECT * FROM rk_ci ORDER BY email;
SELECT idem._key_hash('Ann@Example.com'::citext) = idem._key_hash('ann@example.COM'::citext) AS citext_equal;

-- A nondeterministic collation (case-insensitive ICU): a key of that
-- collation hashes its equal strings alike, and source keys compare in the
-- target column's collation (as its unique index does), whether or not the
-- source's rows carry it.
CREATE COLLATION rk_nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE rk_nd (name text COLLATE rk_nocase PRIMARY KEY, v int);
SELECT idem._key_hash('Ann'::text COLLATE rk_nocase) = idem._key_hash('ANN'::text COLLATE rk_nocase) AS nocase_equal,
       idem._key_hash('Ann'::text COLLATE "C") = idem._key_hash('ANN'::text COLLATE "C") AS c_equal;
SELECT show_error($$SELECT * FROM idem.merge_query('rk_nd', 'SELECT name COLLATE rk_nocase AS name, v FROM (VALUES (''Ann'', 1), (''ANN'', 2), (''Bo'', 3)) AS s(name, v)')$$);
-- 'Ann' and 'ANN' are one key but not the same row (row images compare
-- bytes): refused even with equal values.
SELECT show_error($$SELECT * FROM idem.merge_query('rk_nd', 'SELECT name COLLATE rk_nocase AS name, v FROM (VALUES (''Ann'', 1), (''ANN'', 1), (''Bo'', 3)) AS s(name, v)')$$);
SELECT * FROM idem.merge_query('rk_nd', 'SELECT name COLLATE rk_nocase AS name, v FROM (VALUES (''Ann'', 1), (''Ann'', 1), (''Bo'', 3)) AS s(name, v)');
-- A source in the database's collation: 'Cy' and 'CY' are still one key of
-- the target (21000, not PostgreSQL's "cannot affect row a second time").
SELECT lower(show_error($$SELECT * FROM idem.merge_query('rk_nd', 'SELECT * FROM (VALUES (''Cy'', 1), (''CY'', 2)) AS s(name, v)')$$)) AS error;
SELECT * FROM idem.merge_query('rk_nd', 'SELECT * FROM (VALUES (''ANN'', 1), (''bo'', 3)) AS s(name, v)');
SELECT count(*) AS rk_nd_rows FROM rk_nd;

-- Key columns of conflicting collations (one case-insensitive, one "C"):
-- no one hash is right for both (the call has no collation), so every row
-- is grouped under each column's own, and the repeat is still found.
CREATE TABLE rk_two (a text, b text, v int, PRIMARY KEY (a, b));
INSERT INTO rk_two VALUES ('z', 'z', 0);
-- (Which spelling the message names depends on the grouping's order: lower.)
SELECT lower(show_error($$SELECT * FROM idem.merge_query('rk_two', 'SELECT a COLLATE rk_nocase AS a, b COLLATE "C" AS b, v FROM (VALUES (''X'', ''1'', 1), (''x'', ''1'', 1)) AS s(a, b, v)')$$)) AS error;
SELECT count(*) AS rk_two_rows FROM rk_two;
CREATE VIEW rk_two_src AS
  SELECT a COLLATE rk_nocase AS a, b COLLATE "C" AS b FROM (VALUES ('X', '1'), ('x', '1')) AS s(a, b);
SELECT idem._repeat_hashes(a, b) IS NULL AS unknown, bool_and(idem._key_repeats('{}', a, b)) AS every_row
  FROM rk_two_src;
SELECT show_error($$SELECT idem._key_hash(a, b) FROM rk_two_src$$);

-- A key type without a hash function (money): grouped exactly, as before.
CREATE TABLE rk_money (m money PRIMARY KEY, v text);
INSERT INTO rk_money VALUES (0, 'zero');
SELECT * FROM idem.merge_query('rk_money', $$SELECT * FROM (VALUES (1::money, 'a'), (1::money, 'a'), (2::money, 'b')) AS s(m, v)$$);
SELECT show_error($$SELECT * FROM idem.merge_query('rk_money', 'SELECT * FROM (VALUES (1::money, ''a''), (1::money, ''z'')) AS s(m, v)')$$);
SELECT * FROM rk_money ORDER BY m;

-- A composite key: (x, x) for many x, whose per-column hashes are combined:
-- no false repeat changes a result.
CREATE TABLE rk_pair (a int, b int, v int, PRIMARY KEY (a, b));
INSERT INTO rk_pair VALUES (0, 0, 0);
SELECT * FROM idem.merge_query('rk_pair', 'SELECT g AS a, g AS b, g AS v FROM generate_series(1, 3000) g UNION ALL SELECT 5, 5, 5');
SELECT count(*) AS pairs FROM rk_pair;

-- Append into a log partitioned by day without a unique index: a batch
-- without repeats takes one guarded INSERT; with an identical repeat the
-- whole statement collapses it; with a differing one, ID005. Each event is
-- in the log once.
CREATE TABLE rk_log (id bigint NOT NULL, day date NOT NULL, kind text) PARTITION BY RANGE (day);
CREATE TABLE rk_log_1 PARTITION OF rk_log FOR VALUES FROM ('2026-01-01') TO ('2026-01-02');
CREATE TABLE rk_log_2 PARTITION OF rk_log FOR VALUES FROM ('2026-01-02') TO ('2026-01-03');
CREATE INDEX ON rk_log (id);
CREATE TABLE rk_events (id bigint, day date, kind text);
INSERT INTO rk_events SELECT g, '2026-01-01', 'paid' FROM generate_series(1, 100) g;
SELECT * FROM idem.append('rk_log', 'rk_events', key => '{id}', within => '1 day');
TRUNCATE rk_events;
INSERT INTO rk_events SELECT g, '2026-01-02', 'paid' FROM generate_series(51, 150) g;
INSERT INTO rk_events VALUES (150, '2026-01-02', 'paid');
SELECT * FROM idem.append('rk_log', 'rk_events', key => '{id}', exclude_columns => '{day}', within => '1 day');
INSERT INTO rk_events VALUES (151, '2026-01-02', 'paid'), (151, '2026-01-02', 'refunded');
SELECT show_error($$SELECT * FROM idem.append('rk_log', 'rk_events', key => '{id}', exclude_columns => '{day}')$$);
SELECT count(*) AS events, count(DISTINCT id) AS ids, max(id) AS last_id FROM rk_log;
