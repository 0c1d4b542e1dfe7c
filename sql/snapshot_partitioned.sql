-- snapshot into a history partitioned on a key column keeps to the batch's
-- partitions (issue 45), as merge and append do: the others are neither
-- planned nor locked, and the versions written are an unpruned snapshot's.
CREATE FUNCTION sp_locks(parent regclass) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(DISTINCT c.relname, ', ' ORDER BY c.relname), 'none')
    FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
   WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND c.relispartition AND c.relkind = 'r'
     AND parent IN (SELECT a.relid FROM pg_partition_ancestors(c.oid) a)
$$;
CREATE TABLE sp_hist (region text NOT NULL, id int NOT NULL, status text, valid_from timestamptz, valid_to timestamptz)
  PARTITION BY LIST (region);
CREATE TABLE sp_hist_eu PARTITION OF sp_hist FOR VALUES IN ('eu');
CREATE TABLE sp_hist_us PARTITION OF sp_hist FOR VALUES IN ('us');
CREATE TABLE sp_hist_jp PARTITION OF sp_hist FOR VALUES IN ('jp');
SELECT idem.snapshot_prepare('sp_hist', ARRAY['region', 'id'], valid_to => 'valid_to');
SELECT * FROM idem.snapshot_query('sp_hist',
  $$SELECT r AS region, g AS id, 'new' AS status FROM unnest('{eu,us,jp}'::text[]) r, generate_series(1, 3) g$$,
  '{region,id}', as_of => '2024-07-01');
-- One region changes: only its partition.
BEGIN;
SELECT * FROM idem.snapshot_query('sp_hist',
  $$SELECT 'eu' AS region, g AS id, CASE WHEN g = 2 THEN 'paid' ELSE 'new' END AS status FROM generate_series(1, 3) g$$,
  '{region,id}', as_of => '2024-07-02');
SELECT sp_locks('sp_hist');
COMMIT;
SELECT region, id, status, valid_from, valid_to FROM sp_hist WHERE region = 'eu' AND id = 2 ORDER BY valid_from;
-- A batch whose region changes when read again: run again unpruned, the
-- same versions as without pruning.
CREATE SEQUENCE sp_seq;
SELECT * FROM idem.snapshot_query('sp_hist',
  $$SELECT CASE WHEN nextval('sp_seq') = 1 THEN 'us' ELSE 'jp' END AS region, 1 AS id, 'late' AS status$$,
  '{region,id}', as_of => '2024-07-03');
SELECT region, id, status, valid_to IS NULL AS current FROM sp_hist WHERE id = 1 AND region IN ('us', 'jp')
 ORDER BY region, valid_from;
-- hard_deletes => 'invalidate' reads every current version: not pruned.
BEGIN;
SELECT * FROM idem.snapshot_query('sp_hist', $$SELECT 'eu' AS region, 1 AS id, 'new' AS status$$,
  '{region,id}', as_of => '2024-07-04', hard_deletes => 'invalidate');
SELECT sp_locks('sp_hist');
ROLLBACK;
DROP TABLE sp_hist;
DROP SEQUENCE sp_seq;
DROP FUNCTION sp_locks(regclass);
