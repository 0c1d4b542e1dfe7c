-- pg_idempotent 0.4.0 -> 0.5.0
-- (A fresh CREATE EXTENSION runs 0.1.0, then each upgrade script, then this.)
\echo Use "ALTER EXTENSION pg_idempotent UPDATE TO '0.5.0'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- The record of what overwrite_partition wrote also keeps the query's rows
-- as the query returned them, before the casts to the partition's column
-- types: their digest, and the query's column types. When every cast is
-- immutable, a rerun whose query returns those rows again skips without
-- casting them (see src/written_units.hpp). NULL when a cast is not
-- immutable (text to date depends on DateStyle, for one), when the target
-- column is a domain, or when the rows stored are not the cast rows (a
-- BEFORE trigger changed them). The table is a cache, not dumped: existing
-- records keep NULL here and are completed by the next write.
ALTER TABLE idem.written_units
  ADD COLUMN query_shape text,   -- type:typmod of each column of the query
  ADD COLUMN query_digest text;  -- v1 checksum of the query's rows, as it returned them
COMMENT ON TABLE idem.written_units IS
  'Internal cache: what overwrite_partition last wrote into each partition (digest, row count, the rows'' xmin and cmin, and the digest of the query rows they were cast from), so an identical rerun can prove the partition unchanged without hashing it, and the query''s rows the same without casting them';
COMMENT ON COLUMN idem.written_units.query_shape IS
  'The column types of the query whose rows were written, as type OID:typmod;... (NULL: a cast was not immutable, or the rows stored were not the cast rows)';
COMMENT ON COLUMN idem.written_units.query_digest IS
  'v1 checksum of the query''s rows as the query returned them, before the casts (NULL as for query_shape)';
