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

-- ---------------------------------------------------------------------------
-- The digest and the sample of the same rows from one pass, as an aggregate
-- that parallel workers can share: idem._digest_sample_agg(c1, c2, ...)
-- gives "<v1 checksum> <sample hex>", the checksum as idem._digest_agg
-- gives it. overwrite_partition computes the query's preimage with it (the
-- casts beside it, with idem._digest_agg). Each worker samples its share of
-- the rows; the leader merges the partial samples. Like idem._digest_agg,
-- the support functions take or return internal, so they cannot be called
-- on their own from SQL, and the aggregate runs as the caller, on rows the
-- caller can read.
CREATE FUNCTION idem._digest_sample_agg_add(internal, VARIADIC "any") RETURNS internal
  AS 'MODULE_PATHNAME', 'idem__digest_sample_agg_add'
  LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION idem._digest_sample_agg_add(internal, "any") IS
  'Internal: transition function of idem._digest_sample_agg (adds one row''s v1 hash to the digest and the sample)';

CREATE FUNCTION idem._digest_sample_agg_combine(internal, internal) RETURNS internal
  AS 'MODULE_PATHNAME', 'idem__digest_sample_agg_combine'
  LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION idem._digest_sample_agg_combine(internal, internal) IS
  'Internal: combine function of idem._digest_sample_agg (adds two partial digests, merges their samples)';

CREATE FUNCTION idem._digest_sample_agg_serialize(internal) RETURNS bytea
  AS 'MODULE_PATHNAME', 'idem__digest_sample_agg_serialize'
  LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION idem._digest_sample_agg_serialize(internal) IS
  'Internal: serial function of idem._digest_sample_agg (a partial digest and sample, at most 32 kB)';

CREATE FUNCTION idem._digest_sample_agg_deserialize(bytea, internal) RETURNS internal
  AS 'MODULE_PATHNAME', 'idem__digest_sample_agg_deserialize'
  LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION idem._digest_sample_agg_deserialize(bytea, internal) IS
  'Internal: deserial function of idem._digest_sample_agg';

CREATE FUNCTION idem._digest_sample_agg_final(internal) RETURNS text
  AS 'MODULE_PATHNAME', 'idem__digest_sample_agg_final'
  LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION idem._digest_sample_agg_final(internal) IS
  'Internal: final function of idem._digest_sample_agg (the checksum text, a space, the sample in hex)';

CREATE AGGREGATE idem._digest_sample_agg(VARIADIC "any") (
  SFUNC = idem._digest_sample_agg_add,
  STYPE = internal,
  FINALFUNC = idem._digest_sample_agg_final,
  COMBINEFUNC = idem._digest_sample_agg_combine,
  SERIALFUNC = idem._digest_sample_agg_serialize,
  DESERIALFUNC = idem._digest_sample_agg_deserialize,
  PARALLEL = SAFE
);
COMMENT ON AGGREGATE idem._digest_sample_agg(VARIADIC "any") IS
  'Internal: the v1 checksum of the rows it aggregates and a sample of their hashes, "<checksum> <sample hex>" (parallel safe)';
