-- pg_idempotent 0.3.0 -> 0.4.0
-- (A fresh CREATE EXTENSION runs 0.1.0, then each upgrade script, then this.)
\echo Use "ALTER EXTENSION pg_idempotent UPDATE TO '0.4.0'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- The v1 checksum as an aggregate: idem._digest_agg(c1, c2, ...) over the
-- columns of each row gives the same text as idem.checksum_query over the
-- same rows ("v1:<count>:<hex>"). overwrite_partition and replace_where use
-- it to compare the query's rows with the unit's: as a parallel-safe
-- aggregate with a combine function, PostgreSQL may split each of the two
-- scans among parallel workers (the digest is an order-independent sum, so
-- partial sums add up to the same result).
--
-- The support functions take or return internal, so they cannot be called
-- on their own from SQL; the aggregate runs as the caller, on rows the
-- caller can read.
CREATE FUNCTION idem._digest_agg_add(internal, VARIADIC "any") RETURNS internal
  AS 'MODULE_PATHNAME', 'idem__digest_agg_add'
  LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION idem._digest_agg_add(internal, "any") IS
  'Internal: transition function of idem._digest_agg (adds one row''s v1 hash)';

CREATE FUNCTION idem._digest_agg_combine(internal, internal) RETURNS internal
  AS 'MODULE_PATHNAME', 'idem__digest_agg_combine'
  LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION idem._digest_agg_combine(internal, internal) IS
  'Internal: combine function of idem._digest_agg (adds two partial digests)';

CREATE FUNCTION idem._digest_agg_serialize(internal) RETURNS bytea
  AS 'MODULE_PATHNAME', 'idem__digest_agg_serialize'
  LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION idem._digest_agg_serialize(internal) IS
  'Internal: serial function of idem._digest_agg (a partial digest as 24 bytes)';

CREATE FUNCTION idem._digest_agg_deserialize(bytea, internal) RETURNS internal
  AS 'MODULE_PATHNAME', 'idem__digest_agg_deserialize'
  LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION idem._digest_agg_deserialize(bytea, internal) IS
  'Internal: deserial function of idem._digest_agg';

CREATE FUNCTION idem._digest_agg_final(internal) RETURNS text
  AS 'MODULE_PATHNAME', 'idem__digest_agg_final'
  LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION idem._digest_agg_final(internal) IS
  'Internal: final function of idem._digest_agg (the checksum text)';

CREATE AGGREGATE idem._digest_agg(VARIADIC "any") (
  SFUNC = idem._digest_agg_add,
  STYPE = internal,
  FINALFUNC = idem._digest_agg_final,
  COMBINEFUNC = idem._digest_agg_combine,
  SERIALFUNC = idem._digest_agg_serialize,
  DESERIALFUNC = idem._digest_agg_deserialize,
  PARALLEL = SAFE
);
COMMENT ON AGGREGATE idem._digest_agg(VARIADIC "any") IS
  'Internal: the v1 checksum of the rows it aggregates, one argument per column (the text idem.checksum_query gives); parallel safe';

-- ---------------------------------------------------------------------------
-- What overwrite_partition last wrote into each partition: the digest of the
-- rows its INSERT stored (from the INSERT's RETURNING) and the stamp those
-- rows carry (their xmin and cmin). While every row of the partition still
-- has that stamp, there are as many, the columns have the same shape, and
-- fewer than 2^31 transactions have passed, the partition is unchanged, and
-- an identical rerun compares the query's digest with this one instead of
-- hashing the partition again: it reads only the rows' headers. Anything else
-- falls back to hashing. See src/written_units.hpp.
--
-- A cache, keyed by OID: not registered with pg_extension_config_dump (after
-- a restore the rows have other xmins, so a record could not match anyway).
-- Closed to PUBLIC: the functions read and write it as the extension owner,
-- so nobody can plant a record that makes a rerun skip.
CREATE TABLE idem.written_units (
  relid oid PRIMARY KEY,
  shape text NOT NULL,        -- attnum:type:typmod of each column the digest reads
  digest text NOT NULL,       -- v1 checksum of the rows written
  row_count bigint NOT NULL,
  row_xmin xid,               -- the rows' xmin and cmin (NULL when no row was written)
  row_cmin cid,
  written_by xid8 NOT NULL,   -- the writing top-level transaction
  written_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
REVOKE ALL ON idem.written_units FROM PUBLIC;
COMMENT ON TABLE idem.written_units IS
  'Internal cache: what overwrite_partition last wrote into each partition (digest, row count, the rows'' xmin and cmin), so an identical rerun can prove the partition unchanged without hashing it';
