-- merge into a partitioned target keeps to the partitions of the batch
-- (issue 45): its partition key is a key column, so the batch's values of it
-- are the only partitions its keys can be in. The planner leaves the others
-- out: not planned, not locked. The counts and the rows are those of an
-- unpruned merge in every case below.
CREATE FUNCTION mp_locks(parent regclass) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(DISTINCT c.relname, ', ' ORDER BY c.relname), 'none')
    FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
   WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND c.relispartition AND c.relkind = 'r'
     AND parent IN (SELECT a.relid FROM pg_partition_ancestors(c.oid) a)
$$;
CREATE TABLE mp_sales (day date NOT NULL, store int NOT NULL, amount numeric, deleted boolean DEFAULT false,
                       PRIMARY KEY (day, store)) PARTITION BY RANGE (day);
SELECT format('CREATE TABLE mp_sales_%s PARTITION OF mp_sales FOR VALUES FROM (%L) TO (%L)',
              to_char(date '2024-07-01' + i, 'MMDD'), date '2024-07-01' + i, date '2024-07-01' + i + 1)
  FROM generate_series(0, 29) i \gexec
INSERT INTO mp_sales SELECT date '2024-07-01' + d, s, d * 100 + s FROM generate_series(0, 29) d, generate_series(1, 5) s;

-- One day, 2 of 5 rows changed: only that day's partition is locked.
BEGIN;
SELECT * FROM idem.merge_query('mp_sales',
  'SELECT day, store, CASE WHEN store <= 2 THEN amount + 1 ELSE amount END AS amount FROM mp_sales WHERE day = $1',
  '{day,store}', params => idem.params('2024-07-08'::date), columns => '{amount}');
SELECT mp_locks('mp_sales');
COMMIT;
SELECT store, amount FROM mp_sales WHERE day = '2024-07-08' ORDER BY store;
-- Three days, with a new key on one of them: the three partitions.
BEGIN;
SELECT * FROM idem.merge_query('mp_sales',
  $$SELECT day, store, amount FROM mp_sales WHERE day IN ('2024-07-02', '2024-07-12')
    UNION ALL SELECT '2024-07-20'::date, 9, 1.5$$, '{day,store}', columns => '{amount}');
SELECT mp_locks('mp_sales');
COMMIT;
-- idem.merge from a table, with deletes and versions.
CREATE TABLE mp_batch (day date, store int, amount numeric, gone boolean);
INSERT INTO mp_batch VALUES ('2024-07-15', 1, 0, true), ('2024-07-15', 2, 7, false), ('2024-07-15', 6, 8, false);
BEGIN;
SELECT * FROM idem.merge('mp_sales', 'mp_batch', key => '{day,store}', delete_column => 'gone', columns => '{amount}');
SELECT mp_locks('mp_sales');
COMMIT;
SELECT store, amount FROM mp_sales WHERE day = '2024-07-15' ORDER BY store;

-- A first load into an empty day of a table holding other days: the day's
-- partition is empty, which is all that matters for the batch's keys.
CREATE TABLE mp_sales_0731 PARTITION OF mp_sales FOR VALUES FROM ('2024-07-31') TO ('2024-08-01');
BEGIN;
SELECT * FROM idem.merge_query('mp_sales', 'SELECT ''2024-07-31''::date AS day, g AS store, g AS amount FROM generate_series(1, 4) g',
  '{day,store}', columns => '{amount}');
SELECT mp_locks('mp_sales');
COMMIT;
SELECT * FROM idem.merge_query('mp_sales', 'SELECT ''2024-07-31''::date AS day, g AS store, g AS amount FROM generate_series(1, 4) g',
  '{day,store}', columns => '{amount}');

-- A source that returns other days when read again (volatile: a sequence
-- decides the day): the values read first miss the rows of 2024-07-22, the
-- statement notices, and the merge runs again over every partition, with
-- the same result as a merge that never pruned.
CREATE SEQUENCE mp_seq;
SELECT * FROM idem.merge_query('mp_sales',
  $$SELECT CASE WHEN nextval('mp_seq') = 1 THEN '2024-07-21'::date ELSE '2024-07-22'::date END AS day,
           1 AS store, 42 AS amount$$, '{day,store}', columns => '{amount}');
SELECT day, store, amount FROM mp_sales WHERE day IN ('2024-07-21', '2024-07-22') AND store = 1 ORDER BY day;

-- A NULL partition key in the source: the same error as ever.
SELECT show_error($$SELECT * FROM idem.merge_query('mp_sales', 'SELECT NULL::date AS day, 1 AS store, 1 AS amount',
  '{day,store}', columns => '{amount}')$$);

-- More values than the statement keeps to (1,000): every partition, and
-- the same counts.
CREATE TABLE mp_hash (id int PRIMARY KEY, v int) PARTITION BY HASH (id);
SELECT format('CREATE TABLE mp_hash_%s PARTITION OF mp_hash FOR VALUES WITH (MODULUS 8, REMAINDER %s)', r, r)
  FROM generate_series(0, 7) r \gexec
INSERT INTO mp_hash SELECT g, g FROM generate_series(1, 1500) g;
SELECT * FROM idem.merge_query('mp_hash', 'SELECT g AS id, CASE WHEN g % 100 = 0 THEN -g ELSE g END AS v FROM generate_series(1, 1501) g');
SELECT * FROM idem.merge_query('mp_hash', 'SELECT g AS id, g AS v FROM generate_series(1, 3) g');

-- delete_missing reads the whole target (or its scope): never pruned, and
-- right.
BEGIN;
SELECT * FROM idem.merge_query('mp_hash', 'SELECT g AS id, g AS v FROM generate_series(1, 1400) g', delete_missing => true);
SELECT count(*) FROM mp_hash;
ROLLBACK;

DROP TABLE mp_sales, mp_batch, mp_hash;
DROP SEQUENCE mp_seq;
DROP FUNCTION mp_locks(regclass);
