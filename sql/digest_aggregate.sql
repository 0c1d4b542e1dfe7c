-- idem._digest_agg: the v1 checksum as a parallel-safe aggregate (0.4.0).
-- overwrite_partition, replace_where and idem.checksum compare through it,
-- so it must give exactly the text the digest receiver gives
-- (idem.checksum_query) for every kind of value, run in one process or split
-- among parallel workers.
CREATE TABLE agg_rows (
  id int, n numeric, f float8, t text, b bytea, big text, u uuid, nm name,
  a int[], ts timestamptz, c char(3), bits bit(4), drop_me int, j jsonb, flag boolean);
ALTER TABLE agg_rows ALTER COLUMN big SET STORAGE EXTERNAL;  -- out of line, uncompressed
INSERT INTO agg_rows
SELECT g,
       CASE WHEN g % 7 = 0 THEN NULL ELSE (g % 97) * 1.5 END,
       CASE g % 5 WHEN 0 THEN '-0' WHEN 1 THEN 'NaN' ELSE (g / 3.0)::text END::float8,
       CASE WHEN g % 11 = 0 THEN NULL WHEN g % 500 = 1 THEN repeat('compressible ', 2000) ELSE 'row ' || g END,
       decode(lpad(to_hex(g), 8, '0'), 'hex'),
       CASE WHEN g % 1000 = 3 THEN repeat(md5(g::text), 200) END,
       md5(g::text)::uuid,
       ('name ' || (g % 13))::name,
       ARRAY[g, NULL, g % 4],
       '2024-07-07 00:00+00'::timestamptz + g * interval '1 minute',
       CASE WHEN g % 3 = 0 THEN 'ab' ELSE 'abc' END,
       (g % 16)::bit(4),
       g,
       jsonb_build_object('g', g, 'odd', g % 2 = 1),
       g % 2 = 0
  FROM generate_series(1, 20000) g;
INSERT INTO agg_rows SELECT * FROM agg_rows WHERE id <= 10;  -- duplicates count twice
ALTER TABLE agg_rows DROP COLUMN drop_me;                      -- a dropped column is no column
ANALYZE agg_rows;
SELECT count(*) AS compressed_values FROM agg_rows WHERE pg_column_compression(t) IS NOT NULL;
SELECT count(*) AS external_values FROM agg_rows WHERE pg_column_size(big) > 6000;

CREATE VIEW agg_cols AS SELECT id, n, f, t, b, big, u, nm, a, ts, c, bits, j, flag FROM agg_rows;

-- One process.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE agg_serial AS
  SELECT (SELECT idem._digest_agg(id, n, f, t, b, big, u, nm, a, ts, c, bits, j, flag) FROM agg_rows) AS aggregate,
         idem.checksum_query('SELECT id, n, f, t, b, big, u, nm, a, ts, c, bits, j, flag FROM agg_rows') AS receiver;
SELECT aggregate = receiver AS same_text, split_part(aggregate, ':', 2) AS rows FROM agg_serial;

-- Split among parallel workers: the plan shows the partial aggregates, at
-- least one worker ran, and the text is the same.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT idem._digest_agg(id, n, f, t, b, big, u, nm, a, ts, c, bits, j, flag) FROM agg_rows;
CREATE FUNCTION workers_launched(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO plan;
  RETURN (SELECT coalesce(sum(m[1]::int), 0)
            FROM regexp_matches(plan::text, '"Workers Launched": (\d+)', 'g') m);
END $$;
SELECT workers_launched('SELECT idem._digest_agg(id, n, f, t, b, big, u, nm, a, ts, c, bits, j, flag) FROM agg_rows') > 0
  AS workers_ran;
SELECT (SELECT idem._digest_agg(id, n, f, t, b, big, u, nm, a, ts, c, bits, j, flag) FROM agg_rows) = aggregate
  AS parallel_same FROM agg_serial;
-- Only the workers' partial states (serialized, sent, combined) make the result.
SET parallel_leader_participation = off;
SELECT (SELECT idem._digest_agg(id, n, f, t, b, big, u, nm, a, ts, c, bits, j, flag) FROM agg_rows) = aggregate
  AS workers_only_same FROM agg_serial;
RESET parallel_leader_participation;
-- idem.checksum goes through the aggregate; the receiver still takes a query.
SELECT idem.checksum('agg_rows') = aggregate AS checksum_same,
       idem.checksum('agg_cols') = aggregate AS view_same FROM agg_serial;
SELECT idem.checksum('agg_rows', '{big, j}')
       = idem.checksum_query('SELECT id, n, f, t, b, u, nm, a, ts, c, bits, flag FROM agg_rows') AS excluded_same;

-- No rows, in one process and in parallel: the digest of the empty multiset.
SELECT idem._digest_agg(id) FROM agg_rows WHERE id < 0;
SELECT idem._digest_agg(x) FROM (SELECT 1 WHERE false) s (x);
SELECT idem.checksum_query('SELECT 1 WHERE false');
-- Every group its own digest (many states sharing one call's hasher).
SELECT id % 3 AS grp,
       idem._digest_agg(id, t, big) = idem.checksum_query(format('SELECT id, t, big FROM agg_rows WHERE id %% 3 = %s', id % 3)) AS same
  FROM agg_rows GROUP BY 1 ORDER BY 1;
-- A changed value, a missing row, an extra duplicate: a different digest.
SELECT (SELECT idem._digest_agg(id, t) FROM agg_rows) <> (SELECT idem._digest_agg(id, CASE WHEN id = 20000 THEN t || '.' ELSE t END) FROM agg_rows) AS value_changes,
       (SELECT idem._digest_agg(id, t) FROM agg_rows) <> (SELECT idem._digest_agg(id, t) FROM agg_rows WHERE id <> 20000) AS row_missing,
       (SELECT idem._digest_agg(id, t) FROM agg_rows) <> (SELECT idem._digest_agg(id, t) FROM (SELECT id, t FROM agg_rows UNION ALL SELECT 1, 'row 1') s) AS duplicate_added;

-- The support functions cannot be called on their own: internal cannot be
-- made from SQL.
SELECT show_error('SELECT idem._digest_agg_add(NULL, 1)');
SELECT show_error('SELECT idem._digest_agg_final(NULL::internal)');
SELECT show_error('SELECT idem._digest_agg_deserialize(''\x00''::bytea, NULL)');
SELECT show_error('SELECT idem._digest_sample_agg_add(NULL, 1)');
SELECT show_error('SELECT idem._digest_sample_agg_final(NULL::internal)');
SELECT show_error('SELECT idem._digest_sample_agg_deserialize(''\x00''::bytea, NULL)');

-- idem._digest_sample_agg (0.6.0): the same digest, a space, and a sample of
-- the same rows' hashes (src/overwrite/row_sample.hpp), which overwrite_partition
-- keeps with the query's preimage. In one process, with workers, and from
-- the workers alone (each samples its share, the leader merges): the digest
-- is the checksum, and the sample holds exactly the rows of its bucket (the
-- low 64 bits of each row's hash, as idem._row_digest gives it, zero under
-- the modulus), at most 4096 of them.
CREATE FUNCTION le64(b bytea) RETURNS bit(64) LANGUAGE sql IMMUTABLE AS $$
  SELECT ('x' || string_agg(encode(substring(b from i for 1), 'hex'), '' ORDER BY i DESC))::bit(64)
    FROM generate_series(1, 8) i
$$;
CREATE FUNCTION sample_is_the_bucket(sampled text)
RETURNS TABLE (digest_is_the_checksum boolean, sampled_rows boolean, at_most_4096 boolean, only_the_bucket boolean,
               all_the_bucket boolean)
LANGUAGE sql AS $$
WITH s AS (SELECT decode(split_part(sampled, ' ', 2), 'hex') AS b),
m AS (SELECT le64(substring(b from 1 for 8))::bigint AS modulus FROM s),
sample AS (SELECT le64(substring(b from 9 + 8 * k for 8)) AS lo FROM s, generate_series(0, length(b) / 8 - 2) k),
row_hashes AS (SELECT DISTINCT ('x' || encode(substring(uuid_send(idem._row_digest(r)) from 9 for 8), 'hex'))::bit(64) AS lo
                 FROM agg_cols r),
bucket AS (SELECT lo FROM row_hashes, m WHERE (lo & (modulus - 1)::bit(64)) = 0::bigint::bit(64))
SELECT split_part(sampled, ' ', 1) = (SELECT aggregate FROM agg_serial),
       (SELECT modulus FROM m) > 1,
       (SELECT count(*) FROM sample) BETWEEN 1 AND 4096,
       NOT EXISTS (SELECT lo FROM sample EXCEPT SELECT lo FROM bucket),
       NOT EXISTS (SELECT lo FROM bucket EXCEPT SELECT lo FROM sample)
$$;
SET max_parallel_workers_per_gather = 0;
SELECT 'one process' AS run, * FROM sample_is_the_bucket(
  (SELECT idem._digest_sample_agg(id, n, f, t, b, big, u, nm, a, ts, c, bits, j, flag) FROM agg_rows));
SET max_parallel_workers_per_gather = 2;
SELECT workers_launched('SELECT idem._digest_sample_agg(id, n, f, t, b, big, u, nm, a, ts, c, bits, j, flag) FROM agg_rows') > 0
  AS workers_ran;
SELECT 'with workers' AS run, * FROM sample_is_the_bucket(
  (SELECT idem._digest_sample_agg(id, n, f, t, b, big, u, nm, a, ts, c, bits, j, flag) FROM agg_rows));
SET parallel_leader_participation = off;
SELECT 'workers alone' AS run, * FROM sample_is_the_bucket(
  (SELECT idem._digest_sample_agg(id, n, f, t, b, big, u, nm, a, ts, c, bits, j, flag) FROM agg_rows));
RESET parallel_leader_participation;
-- Every group its own digest and sample.
SELECT id % 3 AS grp,
       split_part(idem._digest_sample_agg(id, t, big), ' ', 1) = idem._digest_agg(id, t, big) AS same_digest,
       length(split_part(idem._digest_sample_agg(id, t, big), ' ', 2)) > 16 AS has_entries
  FROM agg_rows GROUP BY 1 ORDER BY 1;
-- No rows: the digest of the empty multiset and a sample with no entry.
SELECT idem._digest_sample_agg(id) FROM agg_rows WHERE id < 0;
DROP FUNCTION sample_is_the_bucket(text), le64(bytea);

-- overwrite_partition and replace_where under parallel plans: the identical
-- rerun is skipped, one changed row rewrites, and the digests agree with one
-- process.
CREATE TABLE agg_sales (day date NOT NULL, id int NOT NULL, amount numeric(10,2), note text) PARTITION BY RANGE (day);
CREATE TABLE agg_sales_0707 PARTITION OF agg_sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE agg_src AS SELECT '2024-07-07'::date AS day, g AS id, g * 0.5 AS amount, 'note ' || g AS note
  FROM generate_series(1, 20000) g;
SELECT * FROM idem.overwrite_partition('agg_sales', '2024-07-07'::date, 'SELECT * FROM agg_src');
ANALYZE agg_sales_0707, agg_src;
SELECT workers_launched('SELECT idem._digest_agg(day, id, amount, note) FROM agg_sales_0707') > 0 AS workers_ran;
SELECT * FROM idem.overwrite_partition('agg_sales', '2024-07-07'::date, 'SELECT * FROM agg_src');
UPDATE agg_src SET note = 'changed' WHERE id = 12345;
SELECT * FROM idem.overwrite_partition('agg_sales', '2024-07-07'::date, 'SELECT * FROM agg_src');
SELECT * FROM idem.overwrite_partition('agg_sales', '2024-07-07'::date, 'SELECT * FROM agg_src');
SET max_parallel_workers_per_gather = 0;
SELECT * FROM idem.overwrite_partition('agg_sales', '2024-07-07'::date, 'SELECT * FROM agg_src');
SET max_parallel_workers_per_gather = 2;
CREATE TABLE agg_flat AS SELECT * FROM agg_src;
SELECT * FROM idem.replace_where('agg_flat', 'id <= 10000', 'SELECT * FROM agg_src WHERE id <= 10000');
SELECT * FROM idem.replace_where('agg_flat', 'id <= 10000', 'SELECT day, id, amount + 1, note FROM agg_src WHERE id <= 10000');
SELECT sum(amount) AS total_after_replace FROM agg_flat;
RESET ALL;
DROP TABLE agg_rows, agg_serial, agg_sales, agg_src, agg_flat CASCADE;
DROP FUNCTION workers_launched(text);
