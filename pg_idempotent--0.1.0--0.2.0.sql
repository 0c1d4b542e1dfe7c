-- pg_idempotent 0.1.0 -> 0.2.0
-- (A fresh CREATE EXTENSION runs pg_idempotent--0.1.0.sql and then this.)
\echo Use "ALTER EXTENSION pg_idempotent UPDATE TO '0.2.0'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Family 1: swap_partition, and overwrite_partition's mode 'swap'.
CREATE FUNCTION idem.swap_partition(partition regclass, staging regclass,
                                    keep_old boolean DEFAULT false,
                                    lock_timeout interval DEFAULT NULL)
  RETURNS regclass
  AS 'MODULE_PATHNAME', 'idem_swap_partition'
  LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION idem.swap_partition(regclass, regclass, boolean, interval) IS
  'Replaces a partition by a fully built staging table, atomically, in this transaction; returns the new partition';

COMMENT ON FUNCTION idem.overwrite_partition(regclass, anyelement, text, text, boolean, interval) IS
  'Overwrites the partition that holds value with the rows of query: rewritten in place (mode rewrite) or swapped (mode swap); skipped when they are the same rows';

-- ---------------------------------------------------------------------------
-- Logical replication: every state table needs a replica identity, or a
-- FOR ALL TABLES publication makes its UPDATEs and DELETEs fail (55000).
-- usage_grants has no primary key (its unique index is on an expression).
ALTER TABLE idem.usage_grants REPLICA IDENTITY FULL;
