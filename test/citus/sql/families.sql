-- The other families on Citus (issue 25): the checksum of a distributed
-- table is made on the workers and equals the plain table's, publish and
-- rollback, a claim with a distributed effect, and what a worker node
-- refuses (writes, and idem's state, which lives on the coordinator).
-- docs/scaling.md lists what is not tested yet.
SET citus.shard_count = 4;
SET client_min_messages = warning;

CREATE TABLE sales (id bigint PRIMARY KEY, day date, amount numeric(12,2), note text);
SELECT create_distributed_table('sales', 'id');
INSERT INTO sales SELECT g, date '2026-01-01' + g % 7, g * 1.5, CASE WHEN g % 3 = 0 THEN NULL ELSE 'n' || g END
  FROM generate_series(1, 500) g;
CREATE TABLE sales_plain AS SELECT * FROM sales;

-- checksum and diff: the same rows, the same answer.
SELECT idem.checksum('sales') = idem.checksum('sales_plain') AS same_checksum;
SELECT idem.checksum('sales', exclude_columns => '{note}') = idem.checksum('sales_plain', exclude_columns => '{note}')
  AS same_excluding_a_column;
-- The checksum of a distributed table is made on the workers: each shard's
-- row count and sum of row hashes (idem._row_hash), added up on the
-- coordinator; only those numbers travel. The statement idem.checksum runs,
-- explained (worker ports and shard numbers masked):
CREATE FUNCTION plan_of(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF, VERBOSE) ' || q LOOP
    IF l !~ 'port=' THEN RETURN NEXT regexp_replace(l, '_[0-9]{6}', '_<shard>', 'g'); END IF;
  END LOOP;
END $$;
SELECT plan_of($$SELECT pg_catalog.count(*)::pg_catalog.text, COALESCE(pg_catalog.sum(idem._row_hash(id, day, amount, note)), 0)::pg_catalog.text FROM public.sales$$);
-- Inside a transaction it sees the transaction's own writes, as any query.
BEGIN;
DELETE FROM sales WHERE id = 500;
SELECT idem.checksum('sales') = idem.checksum_query('SELECT * FROM sales_plain WHERE id <> 500') AS sees_own_delete;
ROLLBACK;
SELECT count(*) AS differences FROM idem.diff('sales', 'sales_plain');
UPDATE sales SET amount = amount + 1 WHERE id = 42;
SELECT idem.checksum('sales') = idem.checksum('sales_plain') AS same_after_change;
-- The differing row on each side, its columns named.
SELECT * FROM idem.diff('sales', 'sales_plain') ORDER BY 1;

-- Keys: the state table stays on the coordinator, the effect may be
-- distributed; claim, complete and the replay that is skipped.
CREATE TABLE payouts (id bigint PRIMARY KEY, amount numeric);
SELECT create_distributed_table('payouts', 'id');
BEGIN;
SELECT idem.claim('payout-7') AS first_claim;
INSERT INTO payouts VALUES (7, 100);
SELECT idem.complete('payout-7', '{"ok": true}');
COMMIT;
SELECT idem.claim('payout-7') AS second_claim;
SELECT count(*) AS payouts FROM payouts;

-- publish from a distributed query: a version table that has the
-- distribution column of a distributed table the query reads is
-- distributed by it, colocated with that table; another is a Citus local
-- table. Either is in Citus's metadata, so the view is too (no WARNING) and
-- workers read the dataset. An identical republish returns the current
-- version; rollback flips back; retention drops old versions cluster-wide.
SELECT idem.publish('sales_pub', 'SELECT id, amount FROM sales WHERE id <= 20');
SELECT idem.publish('sales_pub', 'SELECT id, amount FROM sales WHERE id <= 20');
UPDATE sales SET amount = 0 WHERE id = 3;
SELECT idem.publish('sales_pub', 'SELECT id, amount FROM sales WHERE id <= 20', keep => 2);
SELECT count(*) FILTER (WHERE amount = 0) AS zero_seen FROM sales_pub;
SELECT idem.rollback('sales_pub');
SELECT count(*) FILTER (WHERE amount = 0) AS zero_after_rollback FROM sales_pub;
SELECT idem.publish('sales_pub', 'SELECT id, amount FROM sales WHERE id <= 20', keep => 1);
SELECT version, row_count FROM idem.versions('sales_pub') ORDER BY version;
SELECT p.logicalrelid::text AS version_table, p.partmethod,
       p.colocationid = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'sales'::regclass) AS with_sales
  FROM pg_dist_partition p WHERE p.logicalrelid::text LIKE 'sales_pub%' ORDER BY 1;
SELECT idem.publish('sales_by_day', 'SELECT day, sum(amount) AS amount FROM sales GROUP BY day');
SELECT p.logicalrelid::text AS version_table, p.partmethod
  FROM pg_dist_partition p WHERE p.logicalrelid::text LIKE 'sales_by_day%';
SELECT idem.checksum('sales_by_day') = idem.checksum_query('SELECT day, sum(amount) AS amount FROM sales GROUP BY day')
  AS by_day_as_queried;

-- Checkpoints: run_once with a distributed effect runs once per watermark,
-- the watermark on the coordinator.
CREATE TABLE loaded (id bigint PRIMARY KEY);
SELECT create_distributed_table('loaded', 'id');
SELECT idem.run_once('loader', 50::bigint, 'INSERT INTO loaded SELECT g FROM generate_series(1, 50) g') AS ran;
SELECT idem.run_once('loader', 50::bigint, 'INSERT INTO loaded SELECT g FROM generate_series(1, 50) g') AS rerun;
SELECT idem.watermark('loader') AS watermark, (SELECT count(*) FROM loaded) AS loaded;

CREATE TABLE w_events (id bigint PRIMARY KEY, kind text);
SELECT create_distributed_table('w_events', 'id');

-- idem.snapshot does not write a Citus table yet (issue 28): refused with
-- the reason before anything is read or written.
CREATE TABLE sales_hist (id bigint NOT NULL, day date, amount numeric(12,2), note text,
                         valid_from timestamptz NOT NULL, valid_to timestamptz);
SELECT create_distributed_table('sales_hist', 'id');
SELECT * FROM idem.snapshot('sales_hist', 'sales', '{id}');
SELECT count(*) AS sales_hist_rows FROM sales_hist;

-- A merge runs on the coordinator: from a worker (Citus runs queries on any
-- node) it is refused with the reason; a dry run is allowed there.
\getenv worker_port CITUS_WORKER_PORT
\connect - - localhost :worker_port
SET client_min_messages = warning;
SELECT * FROM idem.merge_query('sales', 'SELECT id, day, amount + 1 AS amount, note FROM sales WHERE id < 10');
SELECT * FROM idem.merge_query('sales', 'SELECT id, day, amount + 1 AS amount, note FROM sales WHERE id < 10', dry_run => true);
SELECT * FROM idem.append_query('w_events', 'SELECT 1::bigint AS id, ''paid'' AS kind');
SELECT count(*) AS w_events FROM w_events;
-- The published dataset reads on a worker too.
SELECT count(*) FILTER (WHERE amount = 0) AS zero_seen_on_worker FROM sales_pub;
-- idem's state (keys, checkpoints, datasets) lives on the coordinator: on a
-- worker every state function is refused, reads included (the worker's own
-- idem tables know nothing), and nothing is written there.
SELECT idem.claim('payout-7') AS claim_on_worker;
SELECT * FROM idem.key_status('payout-7');
SELECT idem.advance('nightly', 5);
SELECT idem.publish('sales_pub', 'SELECT id, amount FROM sales WHERE id <= 20');
SELECT (SELECT count(*) FROM idem.keys) AS worker_keys, (SELECT count(*) FROM idem.checkpoints) AS worker_checkpoints;
