-- idem.written_units: after overwrite_partition writes a partition, it keeps
-- the digest of the rows it stored and their stamp (xmin, cmin). A rerun
-- trusts that digest instead of hashing the partition only while every row
-- still carries the stamp, the count and the columns are the same; any
-- change falls back to hashing.
--
-- The probe: plant a wrong digest in the record (same count), of the
-- partition's rows and of the query's rows before the casts. A rerun that
-- trusts the record sees a difference and rewrites; a rerun that rejects it
-- hashes the partition, finds the query's rows, and skips.
CREATE TABLE wu (day date NOT NULL, id int NOT NULL, v text) PARTITION BY RANGE (day);
CREATE TABLE wu_0707 PARTITION OF wu FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE wu_src AS SELECT '2024-07-07'::date AS day, g AS id, 'v' || g AS v FROM generate_series(1, 100) g;
CREATE FUNCTION wu_plant_wrong_digest(rel regclass) RETURNS text LANGUAGE sql AS $$
  UPDATE idem.written_units
     SET digest = 'v1:' || row_count || ':ffffffffffffffffffffffffffffffff',
         query_digest = CASE WHEN query_digest IS NOT NULL
                             THEN 'v1:' || row_count || ':eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee' END
   WHERE relid = rel RETURNING 'planted'
$$;
CREATE FUNCTION wu_rerun() RETURNS text LANGUAGE sql AS $$
  SELECT action FROM idem.overwrite_partition('wu', '2024-07-07'::date, 'SELECT * FROM wu_src')
$$;

SELECT * FROM idem.overwrite_partition('wu', '2024-07-07'::date, 'SELECT * FROM wu_src');
-- The record: the partition's own checksum, its count, the rows' stamp.
SELECT row_count, digest = idem.checksum('wu_0707') AS digest_is_the_partitions,
       row_xmin IS NOT NULL AND row_cmin IS NOT NULL AS stamped,
       (SELECT count(DISTINCT xmin::text || '/' || cmin::text) FROM wu_0707) AS stamps_in_partition,
       written_by = (SELECT transaction_id FROM idem.run_history ORDER BY id DESC LIMIT 1) AS written_by_the_run
  FROM idem.written_units WHERE relid = 'wu_0707'::regclass;
SELECT wu_rerun() AS identical_rerun;
-- Trusted: the planted digest wins, so the rerun rewrites (and records anew).
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS trusted_record;
SELECT wu_rerun() AS after_fresh_record;

-- Each change below makes the record unusable: the planted digest is
-- ignored, the partition is hashed, and the identical rerun skips. Before
-- each, wu_fresh() makes a fresh record (it empties the partition by hand,
-- so the rerun rewrites it) and the probe shows it trusted.
CREATE FUNCTION wu_fresh() RETURNS text LANGUAGE sql AS $$
  DELETE FROM wu_0707;
  SELECT wu_plant_wrong_digest('wu_0707') || ', then ' || wu_rerun();
  SELECT wu_plant_wrong_digest('wu_0707') || ', then ' || wu_rerun();
$$;
-- An UPDATE that changes nothing still makes a new row version.
SELECT wu_fresh() AS trusted_before;
UPDATE wu SET v = v WHERE id = 1;
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS after_noop_update;
-- A skip writes nothing, so the record stays unusable until a write.
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS still_unusable;
-- A row deleted and put back as it was.
SELECT wu_fresh() AS trusted_before;
DELETE FROM wu WHERE id = 2;
INSERT INTO wu VALUES ('2024-07-07', 2, 'v2');
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS after_delete_and_insert;
-- A DELETE that rolled back leaves its command id in the row.
SELECT wu_fresh() AS trusted_before;
BEGIN;
DELETE FROM wu WHERE id = 3;
ROLLBACK;
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS after_rolled_back_delete;
-- A row deleted, and gone from the source too: the same rows as the query,
-- but one stamped row fewer than recorded.
SELECT wu_fresh() AS trusted_before;
DELETE FROM wu WHERE id = 100;
DELETE FROM wu_src WHERE id = 100;
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS after_a_row_fewer;
INSERT INTO wu_src VALUES ('2024-07-07', 100, 'v100');
-- A row added and deleted again by hand leaves the stamped rows as they
-- were: the record still holds.
SELECT wu_fresh() AS trusted_before;
INSERT INTO wu VALUES ('2024-07-07', 101, 'extra');
DELETE FROM wu WHERE id = 101;
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS still_trusted_after_add_and_delete;
-- The same transaction changes a row after its write.
SELECT wu_fresh() AS trusted_before;
BEGIN;
UPDATE wu_src SET v = 'in a transaction' WHERE id = 9;
SELECT * FROM idem.overwrite_partition('wu', '2024-07-07'::date, 'SELECT * FROM wu_src');
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS trusted_in_the_transaction;
UPDATE wu SET v = v WHERE id = 4;
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS same_transaction_update;
UPDATE wu_src SET v = 'v9' WHERE id = 9;
COMMIT;
-- Rows truncated and loaded again by hand, the same values.
SELECT wu_fresh() AS trusted_before;
TRUNCATE wu_0707;
INSERT INTO wu SELECT * FROM wu_src;
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS after_truncate_and_load;
-- A column added without a table rewrite: another shape.
SELECT wu_fresh() AS trusted_before;
ALTER TABLE wu ADD COLUMN extra int DEFAULT 0;
SELECT wu_plant_wrong_digest('wu_0707'),
       (SELECT action FROM idem.overwrite_partition('wu', '2024-07-07'::date, 'SELECT *, 0 FROM wu_src')) AS after_add_column;
ALTER TABLE wu DROP COLUMN extra;
-- A column retyped without a rewrite (varchar widened): another shape.
ALTER TABLE wu ALTER COLUMN v TYPE varchar(20);
SELECT wu_fresh() AS trusted_before;
ALTER TABLE wu ALTER COLUMN v TYPE varchar(30);
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS after_widening;
ALTER TABLE wu ALTER COLUMN v TYPE text;
-- A column dropped (the partition keeps the dropped column's attnum).
ALTER TABLE wu ADD COLUMN extra int;
DELETE FROM wu_0707;
SELECT action AS fresh_record FROM idem.overwrite_partition('wu', '2024-07-07'::date, 'SELECT *, NULL::int FROM wu_src');
SELECT wu_plant_wrong_digest('wu_0707'),
       (SELECT action FROM idem.overwrite_partition('wu', '2024-07-07'::date, 'SELECT *, NULL::int FROM wu_src')) AS trusted;
ALTER TABLE wu DROP COLUMN extra;
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS after_drop_column;

-- The query's rows before the casts (the preimage). When every cast to the
-- columns' types is immutable, the record keeps the digest of the query's
-- rows as the query returned them, and a rerun whose query returns those
-- rows again skips without casting them. The probe here plants a wrong
-- digest of the partition's rows only: a rerun that trusts the preimage
-- skips; one that does not compares the cast rows with the planted digest
-- and rewrites.
CREATE TABLE wq (day date NOT NULL, id bigint NOT NULL, amount numeric(12,2), label varchar(10))
  PARTITION BY RANGE (day);
CREATE TABLE wq_0707 PARTITION OF wq FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
-- int to bigint, numeric to numeric(12,2), text to varchar(10): immutable.
CREATE TABLE wq_src AS
  SELECT '2024-07-07'::date AS day, g AS id, g * 1.5 AS amount, 'l' || g AS label FROM generate_series(1, 50) g;
CREATE FUNCTION wq_run(q text DEFAULT 'SELECT * FROM wq_src') RETURNS text LANGUAGE sql AS $$
  SELECT action FROM idem.overwrite_partition('wq', '2024-07-07'::date, q)
$$;
CREATE FUNCTION wq_plant_wrong_digest() RETURNS text LANGUAGE sql AS $$
  UPDATE idem.written_units SET digest = 'v1:' || row_count || ':ffffffffffffffffffffffffffffffff'
   WHERE relid = 'wq_0707'::regclass RETURNING 'planted'
$$;
CREATE FUNCTION wq_preimage() RETURNS TABLE (query_shape text, query_digest text) LANGUAGE sql AS $$
  SELECT query_shape, query_digest FROM idem.written_units WHERE relid = 'wq_0707'::regclass
$$;
SELECT wq_run() AS first_write;
SELECT w.query_shape = (SELECT string_agg(format('%s:%s;', atttypid, atttypmod), '' ORDER BY attnum)
                          FROM pg_attribute WHERE attrelid = 'wq_src'::regclass AND attnum > 0) AS shape_is_the_querys,
       w.query_digest = idem.checksum_query('SELECT * FROM wq_src') AS digest_is_the_querys_rows,
       w.digest = idem.checksum('wq_0707') AS digest_is_the_partitions,
       w.query_digest <> w.digest AS the_casts_change_the_image
  FROM idem.written_units w WHERE w.relid = 'wq_0707'::regclass;
SELECT wq_plant_wrong_digest(), wq_run() AS preimage_trusted;
SELECT wq_run() AS still_skips;
-- Other query rows whose casts are the same rows (1.500 and 1.5 both store
-- 1.50): the preimage differs, so the cast rows are compared; with the
-- planted digest, that comparison rewrites...
SELECT wq_run($q$SELECT day, id, round(amount, 3), label FROM wq_src$q$) AS other_preimage_compares_casts;
-- ...and with the true digest (just recorded anew), it skips.
SELECT wq_run($q$SELECT day, id, round(amount, 3), label FROM wq_src$q$) AS same_casts_skip;
-- That skip wrote nothing: the preimage is still the one of the write.
SELECT query_digest = idem.checksum_query($q$SELECT day, id, round(amount, 3), label FROM wq_src$q$) AS preimage_of_the_write
  FROM wq_preimage();
-- The source changes: the preimage differs and so do the casts.
UPDATE wq_src SET amount = amount + 1 WHERE id = 1;
SELECT wq_run() AS changed_source;
SELECT wq_plant_wrong_digest(), wq_run() AS preimage_trusted_again;
-- A volatile query returns other rows to the INSERT than to the comparison:
-- the rows stored are not the casts of the rows hashed, and no preimage is
-- kept.
SELECT wq_run($q$SELECT day, id, amount + (random() * 1000)::int, label FROM wq_src$q$) AS volatile_query;
SELECT query_shape IS NULL AND query_digest IS NULL AS no_preimage FROM wq_preimage();
SELECT wq_run() AS back_to_the_source;
-- Mode 'swap' keeps it too.
UPDATE wq_src SET amount = amount + 1 WHERE id = 2;
SELECT action FROM idem.overwrite_partition('wq', '2024-07-07'::date, 'SELECT * FROM wq_src', mode => 'swap') AS swapped;
SELECT query_digest = idem.checksum_query('SELECT * FROM wq_src') AS preimage_after_swap FROM wq_preimage();
SELECT wq_plant_wrong_digest(), wq_run() AS preimage_trusted_after_swap;
-- Casts that are not immutable keep no preimage: timestamptz to date reads
-- TimeZone, so the same query rows store other dates under another
-- setting, and the rerun must compare the cast rows.
ALTER TABLE wq ADD COLUMN seen date;
SET TimeZone = 'UTC';
SELECT wq_run($q$SELECT *, '2024-07-08 00:30+02'::timestamptz FROM wq_src$q$) AS timestamptz_to_date;
SELECT query_shape IS NULL AND query_digest IS NULL AS no_preimage_for_timestamptz_to_date FROM wq_preimage();
SELECT wq_run($q$SELECT *, '2024-07-08 00:30+02'::timestamptz FROM wq_src$q$) AS same_setting_skips;
SET TimeZone = 'Europe/Berlin';
SELECT wq_run($q$SELECT *, '2024-07-08 00:30+02'::timestamptz FROM wq_src$q$) AS other_time_zone_rewrites;
SELECT DISTINCT seen FROM wq;
RESET TimeZone;
ALTER TABLE wq DROP COLUMN seen;
-- A domain column keeps none either (its constraints may change).
CREATE DOMAIN wq_label AS varchar(10) CHECK (VALUE <> '');
ALTER TABLE wq ALTER COLUMN label TYPE wq_label;
UPDATE wq_src SET amount = amount + 1 WHERE id = 3;
SELECT wq_run() AS into_a_domain;
SELECT query_shape IS NULL AS no_preimage_for_a_domain FROM wq_preimage();
ALTER TABLE wq ALTER COLUMN label TYPE varchar(10);
-- The query's column types are part of the preimage: the same bytes of
-- another type cast to another value. 1065353216 as int and 1.0 as real
-- are the same four bytes; cast to numeric, 1065353216 and 1.
CREATE TABLE wt (day date NOT NULL, n numeric) PARTITION BY RANGE (day);
CREATE TABLE wt_0707 PARTITION OF wt FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
SELECT action FROM idem.overwrite_partition('wt', '2024-07-07'::date, $q$SELECT '2024-07-07'::date, 1065353216::int$q$) AS as_int;
SELECT idem.checksum_query($q$SELECT '2024-07-07'::date, 1065353216::int$q$)
     = idem.checksum_query($q$SELECT '2024-07-07'::date, 1.0::real$q$) AS same_image;
SELECT action FROM idem.overwrite_partition('wt', '2024-07-07'::date, $q$SELECT '2024-07-07'::date, 1.0::real$q$) AS as_real;
SELECT n FROM wt;
DROP TABLE wq, wq_src, wt;
DROP DOMAIN wq_label;
DROP FUNCTION wq_run(text), wq_plant_wrong_digest(), wq_preimage();

-- The sample of the query's rows (0.6.0): besides the preimage's digest,
-- the record keeps the low 64 bits of the hash of every query row whose
-- hash falls in one bucket (its low bits zero under a power-of-two
-- modulus), at most 4096 of them. A rerun reads the query until the first
-- row that proves it changed: a row of the bucket the sample does not hold,
-- or one row more than the preimage has. The query here counts the rows it
-- is read for (a sequence in its WHERE; the rows it returns are the same).
CREATE TABLE ws (day date NOT NULL, id bigint NOT NULL, amount numeric(12,2)) PARTITION BY RANGE (day);
CREATE TABLE ws_0707 PARTITION OF ws FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE ws_src AS SELECT '2024-07-07'::date AS day, g AS id, g * 1.5 AS amount FROM generate_series(1, 20000) g;
CREATE SEQUENCE ws_reads;
SELECT nextval('ws_reads') AS counting;
CREATE FUNCTION ws_run(q text DEFAULT 'SELECT * FROM ws_src WHERE nextval(''ws_reads'') > 0')
RETURNS TABLE (action text, rows_read bigint) LANGUAGE plpgsql AS $$
DECLARE
  before bigint := (SELECT last_value FROM ws_reads);
BEGIN
  SELECT o.action INTO action FROM idem.overwrite_partition('ws', '2024-07-07'::date, q) o;
  rows_read := (SELECT last_value FROM ws_reads) - before;
  RETURN NEXT;
END $$;
-- A u64 stored little-endian, as bit(64).
CREATE FUNCTION ws_u64(b bytea) RETURNS bit(64) LANGUAGE sql IMMUTABLE AS $$
  SELECT ('x' || string_agg(encode(substring(b from i for 1), 'hex'), '' ORDER BY i DESC))::bit(64)
    FROM generate_series(1, 8) i
$$;
-- The first write reads the query twice: to hash it with its casts (and
-- sample it), and to insert it.
SELECT * FROM ws_run() AS first_write;
-- The sample is the bucket exactly: every query row whose hash (as
-- idem._row_digest gives it) has its low bits zero under the modulus, and
-- no other. Its modulus is a power of two, and it holds at most 4096
-- entries and at least one (some of 20,000 rows fall in any bucket the
-- builder reaches).
CREATE FUNCTION ws_sample_is_the_bucket()
RETURNS TABLE (modulus bigint, power_of_two boolean, at_most_4096 boolean, only_the_bucket boolean,
               all_the_bucket boolean)
LANGUAGE sql AS $$
WITH s AS (SELECT query_sample AS b FROM idem.written_units WHERE relid = 'ws_0707'::regclass),
m AS (SELECT ws_u64(substring(b from 1 for 8))::bigint AS modulus FROM s),
sampled AS (SELECT ws_u64(substring(b from 9 + 8 * k for 8)) AS lo FROM s, generate_series(0, length(b) / 8 - 2) k),
query_rows AS (SELECT DISTINCT ('x' || encode(substring(uuid_send(idem._row_digest(q)) from 9 for 8), 'hex'))::bit(64) AS lo
                 FROM (SELECT * FROM ws_src) q),
bucket AS (SELECT lo FROM query_rows, m WHERE (lo & (modulus - 1)::bit(64)) = 0::bigint::bit(64))
SELECT (SELECT modulus FROM m),
       (SELECT modulus > 0 AND modulus & (modulus - 1) = 0 FROM m),
       (SELECT count(*) FROM sampled) BETWEEN 1 AND 4096,
       NOT EXISTS (SELECT lo FROM sampled EXCEPT SELECT lo FROM bucket),
       NOT EXISTS (SELECT lo FROM bucket EXCEPT SELECT lo FROM sampled)
$$;
-- Written by one process (nextval is parallel unsafe), from rows in the
-- order CREATE TABLE AS stored them: the same sample every run.
SELECT * FROM ws_sample_is_the_bucket();
-- An identical rerun reads the whole query: the sample never says "same".
SELECT * FROM ws_run() AS identical_rerun;
-- Every row changed: the rerun stops within the first rows, then reads the
-- query twice to write it.
UPDATE ws_src SET amount = amount + 1;
SELECT action, rows_read - 40000 BETWEEN 1 AND 100 AS stopped_early FROM ws_run() AS every_row_changed;
SELECT * FROM ws_run() AS identical_again;
-- One row changed: read until it, if the sample holds its bucket, else to
-- the end; either way it is written.
UPDATE ws_src SET amount = amount + 1 WHERE id = 20000;
SELECT action, rows_read BETWEEN 40001 AND 60000 AS read_at_most_three_times FROM ws_run() AS one_row_changed;
SELECT count(*) = 20000 AND sum(amount) = (SELECT sum(amount) FROM ws_src) AS written FROM ws;
-- Every row twice: each is a row of the preimage, but the count passes it;
-- the rerun stops at row 20,001 (then reads the 40,000 rows twice).
SELECT * FROM ws_run($q$SELECT * FROM ws_src WHERE nextval('ws_reads') > 0
                   UNION ALL SELECT * FROM ws_src WHERE nextval('ws_reads') > 0$q$) AS every_row_twice;
-- Back to once: every row is a row of that preimage and there are fewer,
-- so nothing stops the rerun; it reads the query to the end, then twice more.
SELECT * FROM ws_run() AS back_to_once;
-- A wrong sample costs a pass, never a wrong answer: one that excludes
-- every row (modulus 1, no entry; a rerun tests one row in 16 against it)
-- stops the rerun within the first rows, and the cast rows, compared next,
-- are the partition's: it skips.
UPDATE idem.written_units SET query_sample = '\x0100000000000000' WHERE relid = 'ws_0707'::regclass;
SELECT action, rows_read - 20000 BETWEEN 1 AND 100 AS stopped_early FROM ws_run() AS sample_excluding_all;
-- A sample that does not parse is not used: the whole query is read.
UPDATE idem.written_units SET query_sample = '\x03' WHERE relid = 'ws_0707'::regclass;
SELECT * FROM ws_run() AS unreadable_sample;
-- The write computes the sample with the aggregate idem._digest_sample_agg,
-- which parallel workers may share: each samples its part of the rows, and
-- the leader merges the samples. Planned that way here (for a query without
-- nextval, which is parallel unsafe), it is still exactly the bucket, and
-- its digest is the checksum of the rows; the rerun counting its reads then
-- reads them all and skips.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT idem._digest_sample_agg(q.c1, q.c2, q.c3) FROM (SELECT * FROM ws_src) AS q (c1, c2, c3);
SELECT split_part(idem._digest_sample_agg(q.c1, q.c2, q.c3), ' ', 1) = idem.checksum_query('SELECT * FROM ws_src')
         AS digest_is_the_checksum
  FROM (SELECT * FROM ws_src) AS q (c1, c2, c3);
UPDATE ws_src SET amount = amount + 1;
SELECT action FROM ws_run('SELECT * FROM ws_src') AS written_in_parallel;
-- Which rows the leader and each worker sample depends on timing, and so
-- does the modulus: each side doubles its own only when its sample fills
-- up, and the merge keeps the larger. So the modulus is not shown, only
-- what holds for any split.
SELECT power_of_two, at_most_4096, only_the_bucket, all_the_bucket FROM ws_sample_is_the_bucket();
SELECT * FROM ws_run() AS identical_after_parallel;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
-- No row: the empty digest, and a sample that excludes every row.
SELECT idem._digest_sample_agg(1) AS of_no_row WHERE false;
-- Rows loaded by hand: no record to trust. An identical rerun hashes the
-- partition and the query's rows as stored, and reads the query once
-- (0.8.0 also hashed the query's own rows for a record it does not write,
-- in the same pass); it writes nothing, so the next one does the same.
TRUNCATE ws_0707;
INSERT INTO ws SELECT * FROM ws_src;
SELECT * FROM ws_run() AS by_hand_identical;
SELECT * FROM ws_run() AS by_hand_identical_again;
-- Changed by hand: that pass finds it, the query's own rows are read once
-- more for the record, and once more to write them.
UPDATE ws SET amount = amount + 1 WHERE id <= 10;
SELECT * FROM ws_run() AS by_hand_changed;
SELECT * FROM ws_run() AS identical_after_a_write;
DROP TABLE ws, ws_src;
DROP SEQUENCE ws_reads;
DROP FUNCTION ws_run(text), ws_u64(bytea), ws_sample_is_the_bucket();

-- VACUUM, even VACUUM FREEZE, changes no row: the record still holds. (A
-- frozen row keeps its xmin; the table's relfrozenxid then passes the
-- writer, and the scan reads the frozen hint bits instead of the commit
-- log, which may be truncated below it.)
SELECT wu_fresh() AS trusted_before;
VACUUM wu_0707;
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS trusted_after_vacuum;
SELECT wu_plant_wrong_digest('wu_0707') AS planted_again;
VACUUM (FREEZE) wu_0707;
SELECT age(relfrozenxid) < age(w.row_xmin) AS relfrozenxid_passed_the_writer
  FROM pg_class c, idem.written_units w WHERE c.oid = 'wu_0707'::regclass AND w.relid = c.oid;
SELECT wu_rerun() AS trusted_after_freeze;
SELECT wu_rerun() AS then_skips;

-- Mode 'swap': the partition keeps its OID (its storage is replaced), and
-- its one record now holds the new rows.
UPDATE wu_src SET v = 'swapped' WHERE id = 7;
SELECT oid AS old_partition FROM pg_class WHERE oid = 'wu_0707'::regclass \gset
SELECT * FROM idem.overwrite_partition('wu', '2024-07-07'::date, 'SELECT * FROM wu_src', mode => 'swap');
SELECT 'wu_0707'::regclass::oid = :old_partition AS same_partition, count(*) AS records,
       bool_and(digest = idem.checksum('wu_0707')) AS digest_is_the_partitions
  FROM idem.written_units WHERE relid = 'wu_0707'::regclass;
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS trusted_after_swap;
-- With keep_old the new partition is another table: the record follows
-- it, and the old table, kept with its rows, keeps its own.
UPDATE wu_src SET v = 'swapped, old kept' WHERE id = 7;
SELECT * FROM idem.overwrite_partition('wu', '2024-07-07'::date, 'SELECT * FROM wu_src', mode => 'swap', keep_old => true);
SELECT relid = 'wu_0707'::regclass AS follows_the_new_partition, relid <> :old_partition AS not_the_old_one,
       digest = idem.checksum('wu_0707') AS digest_is_the_partitions
  FROM idem.written_units WHERE relid IN ('wu_0707'::regclass, :old_partition) ORDER BY 1;
SELECT wu_plant_wrong_digest('wu_0707'), wu_rerun() AS trusted_after_keep_old_swap;
SELECT format('DROP TABLE %s', :old_partition::oid::regclass) \gexec

-- No rows: the record is a count of zero.
CREATE TABLE wu_0708 PARTITION OF wu FOR VALUES FROM ('2024-07-08') TO ('2024-07-09');
INSERT INTO wu VALUES ('2024-07-08', 1, 'to be replaced by nothing');
SELECT * FROM idem.overwrite_partition('wu', '2024-07-08'::date, 'SELECT * FROM wu_src WHERE false');
SELECT row_count, row_xmin IS NULL AS no_stamp FROM idem.written_units WHERE relid = 'wu_0708'::regclass;
SELECT action FROM idem.overwrite_partition('wu', '2024-07-08'::date, 'SELECT * FROM wu_src WHERE false') AS empty_rerun;
SELECT wu_plant_wrong_digest('wu_0708'),
       (SELECT action FROM idem.overwrite_partition('wu', '2024-07-08'::date, 'SELECT * FROM wu_src WHERE false')) AS trusted_empty;
INSERT INTO wu VALUES ('2024-07-08', 1, 'by hand');
SELECT wu_plant_wrong_digest('wu_0708'),
       (SELECT row_count FROM idem.overwrite_partition('wu', '2024-07-08'::date, 'SELECT * FROM wu_src WHERE false')) AS row_by_hand_removed;

-- A BEFORE trigger changes the rows as they are stored: the record holds
-- what was stored (RETURNING), so the rerun sees the query differs.
CREATE FUNCTION wu_upper() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.v := upper(NEW.v); RETURN NEW; END $$;
CREATE TRIGGER wu_upper BEFORE INSERT ON wu_0708 FOR EACH ROW EXECUTE FUNCTION wu_upper();
SELECT * FROM idem.overwrite_partition('wu', '2024-07-08'::date, $q$SELECT '2024-07-08'::date, id, v FROM wu_src WHERE id <= 3$q$);
SELECT digest = idem.checksum('wu_0708') AS digest_is_the_stored_rows,
       query_shape IS NULL AND query_digest IS NULL AS no_preimage_of_changed_rows
  FROM idem.written_units WHERE relid = 'wu_0708'::regclass;
SELECT v FROM wu_0708 ORDER BY id;
SELECT action FROM idem.overwrite_partition('wu', '2024-07-08'::date, $q$SELECT '2024-07-08'::date, id, v FROM wu_src WHERE id <= 3$q$) AS query_differs_from_stored;
SELECT action FROM idem.overwrite_partition('wu', '2024-07-08'::date, $q$SELECT '2024-07-08'::date, id, upper(v) FROM wu_src WHERE id <= 3$q$) AS stored_rows_skip;
DROP TRIGGER wu_upper ON wu_0708;

-- The record's stamp is the one the INSERT returned (RETURNING xmin, cmin):
-- in the two statements rewrite mode uses, and in the one statement it
-- uses when a foreign key references the table. Either way it is the rows'
-- stamp, and the record holds.
SELECT row_xmin = (SELECT DISTINCT xmin FROM wu_0707) AND row_cmin = (SELECT DISTINCT cmin FROM wu_0707)
         AS stamp_is_the_rows_two_statements
  FROM idem.written_units WHERE relid = 'wu_0707'::regclass;
CREATE TABLE wf (day date NOT NULL, id int NOT NULL, PRIMARY KEY (day, id)) PARTITION BY RANGE (day);
CREATE TABLE wf_0707 PARTITION OF wf FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE wf_ref (day date, id int, FOREIGN KEY (day, id) REFERENCES wf);
SELECT action FROM idem.overwrite_partition('wf', '2024-07-07'::date,
  $q$SELECT '2024-07-07'::date, g FROM generate_series(1, 5) g$q$) AS first_write;
INSERT INTO wf_ref VALUES ('2024-07-07', 3);
SELECT action FROM idem.overwrite_partition('wf', '2024-07-07'::date,
  $q$SELECT '2024-07-07'::date, g FROM generate_series(1, 6) g$q$) AS one_statement_write;
SELECT row_xmin = (SELECT DISTINCT xmin FROM wf_0707) AND row_cmin = (SELECT DISTINCT cmin FROM wf_0707)
         AS stamp_is_the_rows_one_statement
  FROM idem.written_units WHERE relid = 'wf_0707'::regclass;
SELECT wu_plant_wrong_digest('wf_0707'),
       (SELECT action FROM idem.overwrite_partition('wf', '2024-07-07'::date,
          $q$SELECT '2024-07-07'::date, g FROM generate_series(1, 6) g$q$)) AS trusted_after_one_statement;
DROP TABLE wf_ref, wf;

-- Privileges: the record is closed to callers; a caller with only column
-- privileges (it cannot read xmin) leaves no record, and reruns hash.
CREATE ROLE wu_etl;
GRANT USAGE ON SCHEMA public TO wu_etl;
GRANT SELECT ON wu_src TO wu_etl;
GRANT SELECT (day, id, v), INSERT, DELETE ON wu, wu_0707 TO wu_etl;
UPDATE wu_src SET v = 'by etl' WHERE id = 8;
SET ROLE wu_etl;
SELECT show_error('SELECT * FROM idem.written_units');
SELECT show_error('DELETE FROM idem.written_units');
SELECT * FROM idem.overwrite_partition('wu', '2024-07-07'::date, 'SELECT * FROM wu_src');
SELECT action FROM idem.overwrite_partition('wu', '2024-07-07'::date, 'SELECT * FROM wu_src') AS etl_rerun;
RESET ROLE;
SELECT count(*) AS records_of_wu_0707 FROM idem.written_units WHERE relid = 'wu_0707'::regclass;
SELECT wu_rerun() AS superuser_rerun_hashes;
-- Row security that applies to the caller: a scan of the rows' headers
-- would count rows the caller may not see, so the record is not used and
-- the rerun hashes what the caller sees. (The table owner is not subject
-- to it, and trusts the record.)
CREATE ROLE wu_rls;
GRANT USAGE ON SCHEMA public TO wu_rls;
GRANT SELECT ON wu_src TO wu_rls;
GRANT SELECT, INSERT, DELETE ON wu, wu_0707 TO wu_rls;
ALTER TABLE wu_0707 ENABLE ROW LEVEL SECURITY;
CREATE POLICY wu_all ON wu_0707 USING (true);
SELECT wu_fresh() AS trusted_before;
SELECT wu_plant_wrong_digest('wu_0707');
SET ROLE wu_rls;
SELECT wu_rerun() AS under_row_security;
RESET ROLE;
SELECT wu_rerun() AS owner_trusts_the_record;
ALTER TABLE wu_0707 DISABLE ROW LEVEL SECURITY;

DROP TABLE wu, wu_src;
DROP FUNCTION wu_plant_wrong_digest(regclass), wu_rerun(), wu_fresh(), wu_upper();
REVOKE ALL ON SCHEMA public FROM wu_etl, wu_rls;
DROP ROLE wu_etl, wu_rls;
-- The records of dropped partitions go with the next write.
CREATE TABLE wu2 (day date NOT NULL, n int) PARTITION BY RANGE (day);
CREATE TABLE wu2_0707 PARTITION OF wu2 FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
SELECT * FROM idem.overwrite_partition('wu2', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, 1');
SELECT count(*) FILTER (WHERE relid = 'wu2_0707'::regclass) AS records_of_wu2,
       count(*) FILTER (WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = relid)) AS records_of_dropped_relations
  FROM idem.written_units;
DROP TABLE wu2;

-- A rerun right after a rewrite writes nothing: not WAL for pruning the
-- dead rows the rewrite left on full pages, and not the hint bits of the
-- rows the rewrite inserted and deleted (which dirty every page). A plain
-- read of those pages does both: the last queries below show it, so the
-- checks can fail.
CREATE EXTENSION pg_walinspect;
CREATE EXTENSION pageinspect;
-- pg_walinspect reads flushed WAL only: a commit that wrote flushes it here
-- (wp_flush).
SET synchronous_commit = on;
CREATE TABLE wp_flush (n int);
CREATE TABLE wp (day date NOT NULL, id int NOT NULL, pad text) PARTITION BY RANGE (day);
CREATE TABLE wp_0707 PARTITION OF wp FOR VALUES FROM ('2024-07-07') TO ('2024-07-08')
  WITH (autovacuum_enabled = off);
CREATE TABLE wp_src AS SELECT '2024-07-07'::date AS day, g AS id, repeat('x', 60) AS pad FROM generate_series(1, 2000) g;
SELECT action FROM idem.overwrite_partition('wp', '2024-07-07'::date, 'SELECT * FROM wp_src') AS first_write;
UPDATE wp_src SET pad = repeat('y', 60);
SELECT action FROM idem.overwrite_partition('wp', '2024-07-07'::date, 'SELECT * FROM wp_src') AS rewrite;
-- Prune records of wp_0707 since a point; the insert into wp_flush just
-- before flushed what the statements in between wrote.
CREATE FUNCTION wp_prunes(since pg_lsn) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM pg_get_wal_records_info(since, pg_current_wal_flush_lsn())
   WHERE resource_manager = 'Heap2' AND record_type LIKE 'PRUNE%'
     AND position('/' || pg_relation_filenode('wp_0707') || ' ' IN block_ref) > 0
$$;
SELECT pg_current_wal_flush_lsn() AS before_rerun \gset
SELECT action FROM idem.overwrite_partition('wp', '2024-07-07'::date, 'SELECT * FROM wp_src') AS identical_rerun;
INSERT INTO wp_flush VALUES (1);
SELECT wp_prunes(:'before_rerun') AS prunes_by_the_rerun;
-- Tuples of wp_0707 the recorded write inserted, or deleted, that carry the
-- hint bit saying so (XMIN_COMMITTED 0x0100, XMAX_COMMITTED 0x0400).
CREATE FUNCTION wp_hinted(OUT inserted_hinted bigint, OUT deleted_hinted bigint) LANGUAGE sql AS $$
  SELECT count(*) FILTER (WHERE i.t_xmin = w.row_xmin AND i.t_infomask & 256 <> 0),
         count(*) FILTER (WHERE i.t_xmax = w.row_xmin AND i.t_infomask & 1024 <> 0)
    FROM idem.written_units w,
         generate_series(0, pg_relation_size('wp_0707') / 8192 - 1) AS b,
         heap_page_items(get_raw_page('wp_0707', b::int)) AS i
   WHERE w.relid = 'wp_0707'::regclass
$$;
SELECT * FROM wp_hinted();
SELECT pg_current_wal_flush_lsn() AS before_read \gset
SELECT count(*) AS rows_read FROM wp_0707;
INSERT INTO wp_flush VALUES (1);
SELECT wp_prunes(:'before_read') > 0 AS a_plain_read_prunes;
-- (It prunes the deleted rows away before it reads them: only the inserted
-- rows' hints are there to see.)
SELECT inserted_hinted = 2000 AS a_plain_read_hints_inserted FROM wp_hinted();
RESET synchronous_commit;
DROP TABLE wp, wp_src, wp_flush;
DROP FUNCTION wp_prunes(pg_lsn), wp_hinted();
DROP EXTENSION pg_walinspect;
DROP EXTENSION pageinspect;
