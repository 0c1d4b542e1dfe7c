-- overwrite_partition finds the partition of a value in the parent's
-- partition bounds, as PostgreSQL routes a row (issue 45): every strategy,
-- the edges of a bound, NULL and DEFAULT partitions, a collation, and no
-- lock on any partition but the one overwritten.
CREATE FUNCTION rt_locks(parent regclass) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(c.relname || ' ' || l.mode, ', ' ORDER BY c.relname, l.mode), 'none')
    FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
   WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND c.relispartition
     AND parent IN (SELECT a.relid FROM pg_partition_ancestors(c.oid) a)
$$;

-- RANGE: a value on a lower bound belongs to that partition, one on an
-- upper bound to the next; below the first bound only DEFAULT would take it.
CREATE TABLE rt_range (day date NOT NULL, n int) PARTITION BY RANGE (day);
SELECT format('CREATE TABLE rt_range_%s PARTITION OF rt_range FOR VALUES FROM (%L) TO (%L)',
              to_char(date '2024-07-01' + i, 'MMDD'), date '2024-07-01' + i, date '2024-07-01' + i + 1)
  FROM generate_series(0, 29) i \gexec
SELECT action, row_count FROM idem.overwrite_partition('rt_range', '2024-07-08'::date, 'SELECT ''2024-07-08''::date, 1');
SELECT tableoid::regclass, * FROM rt_range;
SELECT show_error($$SELECT * FROM idem.overwrite_partition('rt_range', '2024-06-30'::date, 'SELECT ''2024-06-30''::date, 1')$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('rt_range', '2024-07-31'::date, 'SELECT ''2024-07-31''::date, 1')$$);
-- The day's own partition, and nothing else, is locked by the job: a reader
-- or a writer of another day never waits on it (rewrite, rerun and swap).
BEGIN;
SELECT action FROM idem.overwrite_partition('rt_range', '2024-07-09'::date, 'SELECT ''2024-07-09''::date, g FROM generate_series(1, 3) g');
SELECT rt_locks('rt_range');
COMMIT;
BEGIN;
SELECT action FROM idem.overwrite_partition('rt_range', '2024-07-09'::date, 'SELECT ''2024-07-09''::date, g FROM generate_series(1, 3) g');
SELECT rt_locks('rt_range');
COMMIT;
BEGIN;
SELECT action FROM idem.overwrite_partition('rt_range', '2024-07-09'::date, 'SELECT ''2024-07-09''::date, g FROM generate_series(1, 4) g', mode => 'swap');
SELECT rt_locks('rt_range');
COMMIT;

-- With a DEFAULT partition, only it would take a value no other bound
-- holds. A swap replaces the partition's storage and keeps its bound: it
-- locks neither the DEFAULT partition nor the parent beyond a reader's lock
-- (the ShareLock on the day is the rebuild of its indexes, under the
-- ACCESS EXCLUSIVE lock). A swap with keep_old detaches the partition and
-- attaches a new table: it locks the parent ACCESS EXCLUSIVE, and the
-- DEFAULT partition too, because ATTACH PARTITION checks that none of its
-- rows belong to the new partition (PostgreSQL's rule, docs/overwrite.md).
CREATE TABLE rt_range_other PARTITION OF rt_range DEFAULT;
SELECT show_error($$SELECT * FROM idem.overwrite_partition('rt_range', '2024-07-31'::date, 'SELECT ''2024-07-31''::date, 1')$$);
BEGIN;
SELECT action FROM idem.overwrite_partition('rt_range', '2024-07-09'::date, 'SELECT ''2024-07-09''::date, g FROM generate_series(1, 5) g', mode => 'swap');
SELECT rt_locks('rt_range');
SELECT string_agg(mode, ', ' ORDER BY mode) AS parent_locks FROM pg_locks
 WHERE pid = pg_backend_pid() AND locktype = 'relation' AND relation = 'rt_range'::regclass;
COMMIT;
BEGIN;
SELECT action FROM idem.overwrite_partition('rt_range', '2024-07-09'::date, 'SELECT ''2024-07-09''::date, g FROM generate_series(1, 6) g', mode => 'swap', keep_old => true);
SELECT rt_locks('rt_range');
SELECT string_agg(mode, ', ' ORDER BY mode) AS parent_locks FROM pg_locks
 WHERE pid = pg_backend_pid() AND locktype = 'relation' AND relation = 'rt_range'::regclass;
ROLLBACK;

-- A timestamp key in a session whose zone abbreviation reads back as
-- another zone (IST is Israel's by default): the value is found all the same.
SET TimeZone = 'Asia/Kolkata';
SET DateStyle = 'Postgres, MDY';
CREATE TABLE rt_hourly (at timestamptz NOT NULL, n int) PARTITION BY RANGE (at);
CREATE TABLE rt_hourly_13 PARTITION OF rt_hourly FOR VALUES FROM ('2024-07-07 13:00+00') TO ('2024-07-07 14:00+00');
CREATE TABLE rt_hourly_14 PARTITION OF rt_hourly FOR VALUES FROM ('2024-07-07 14:00+00') TO ('2024-07-07 15:00+00');
SELECT action FROM idem.overwrite_partition('rt_hourly', '2024-07-07 13:59:59.999999+00'::timestamptz,
  'SELECT ''2024-07-07 13:30+00''::timestamptz, 1');
SELECT tableoid::regclass, n FROM rt_hourly;
RESET DateStyle;
RESET TimeZone;

-- LIST, with a partition for NULL (a NULL value is refused all the same)
-- and a DEFAULT one; the text overload.
CREATE TABLE rt_list (region text, n int) PARTITION BY LIST (region);
CREATE TABLE rt_list_eu PARTITION OF rt_list FOR VALUES IN ('de', 'fr');
CREATE TABLE rt_list_us PARTITION OF rt_list FOR VALUES IN ('us');
CREATE TABLE rt_list_none PARTITION OF rt_list FOR VALUES IN (NULL);
SELECT action FROM idem.overwrite_partition('rt_list', 'fr'::text, 'SELECT ''fr'', 1 UNION ALL SELECT ''de'', 2');
SELECT action FROM idem.overwrite_partition('rt_list', 'us', 'SELECT ''us'', 3');
SELECT show_error($$SELECT * FROM idem.overwrite_partition('rt_list', 'FR'::text, 'SELECT ''FR'', 1')$$);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('rt_list', NULL::text, 'SELECT NULL::text, 1')$$);
CREATE TABLE rt_list_rest PARTITION OF rt_list DEFAULT;
SELECT show_error($$SELECT * FROM idem.overwrite_partition('rt_list', 'jp'::text, 'SELECT ''jp'', 1')$$);
SELECT tableoid::regclass, * FROM rt_list ORDER BY n;

-- A collation on the key: the bounds compare in it (in "C", every upper
-- case letter sorts before every lower case one), as routing does.
CREATE TABLE rt_coll (name text COLLATE "C", n int) PARTITION BY RANGE (name);
CREATE TABLE rt_coll_upper PARTITION OF rt_coll FOR VALUES FROM ('A') TO ('[');
CREATE TABLE rt_coll_lower PARTITION OF rt_coll FOR VALUES FROM ('a') TO ('{');
SELECT action FROM idem.overwrite_partition('rt_coll', 'b'::text, 'SELECT ''b'', 1');
SELECT action FROM idem.overwrite_partition('rt_coll', 'B'::text, 'SELECT ''B'', 2');
SELECT tableoid::regclass, * FROM rt_coll ORDER BY n;

-- HASH: the partition of the value's hash.
CREATE TABLE rt_hash (id int, n int) PARTITION BY HASH (id);
SELECT format('CREATE TABLE rt_hash_%s PARTITION OF rt_hash FOR VALUES WITH (MODULUS 4, REMAINDER %s)', r, r)
  FROM generate_series(0, 3) r \gexec
INSERT INTO rt_hash SELECT g, 0 FROM generate_series(1, 20) g;
SELECT action, row_count FROM idem.overwrite_partition('rt_hash', 7,
  'SELECT id, 1 FROM rt_hash WHERE tableoid = (SELECT tableoid FROM rt_hash WHERE id = 7)');
SELECT count(*) FILTER (WHERE n = 1) AS rewritten,
       bool_and(n = 1) FILTER (WHERE tableoid = (SELECT tableoid FROM rt_hash WHERE id = 7)) AS all_of_the_partition_of_7
  FROM rt_hash;

-- A partition that is itself partitioned: refused, saying so.
CREATE TABLE rt_sub (day date NOT NULL, region text, n int) PARTITION BY RANGE (day);
CREATE TABLE rt_sub_07 PARTITION OF rt_sub FOR VALUES FROM ('2024-07-01') TO ('2024-08-01') PARTITION BY LIST (region);
CREATE TABLE rt_sub_07_eu PARTITION OF rt_sub_07 FOR VALUES IN ('eu');
SELECT show_error($$SELECT * FROM idem.overwrite_partition('rt_sub', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, ''eu'', 1')$$);
SELECT action FROM idem.overwrite_partition('rt_sub_07', 'eu'::text, 'SELECT ''2024-07-07''::date, ''eu'', 1');

DROP TABLE rt_range, rt_hourly, rt_list, rt_coll, rt_hash, rt_sub;
DROP FUNCTION rt_locks(regclass);
