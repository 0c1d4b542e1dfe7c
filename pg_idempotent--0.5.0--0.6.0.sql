-- pg_idempotent 0.5.0 -> 0.6.0
-- (A fresh CREATE EXTENSION runs 0.1.0, then each upgrade script, then this.)
\echo Use "ALTER EXTENSION pg_idempotent UPDATE TO '0.6.0'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- The record of what overwrite_partition wrote also keeps a sample of the
-- query's rows: the low 64 bits of the hash of every row whose hash falls in
-- one bucket, chosen by content (src/core/row_sample.hpp). A rerun reading
-- the query stops at the first row of that bucket whose hash the sample does
-- not hold: the rows changed, and the rest of the query need not be hashed.
-- At most 4096 entries (32 kB). NULL with query_digest, and in records
-- written by 0.5.0 (which the next write completes).
ALTER TABLE idem.written_units
  ADD COLUMN query_sample bytea;  -- modulus, then the sampled hashes; 8 bytes each, little-endian
COMMENT ON COLUMN idem.written_units.query_sample IS
  'A sample of the query''s row hashes, chosen by content (the modulus, then the ascending low 64 bits of each sampled row hash, 8 bytes little-endian each): a rerun stops reading a query at the first row the sample proves new (NULL as for query_digest)';
