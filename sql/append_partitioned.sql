-- append into a partitioned log keeps to the partitions of the batch
-- (issue 45): a key column that is the partition key, or within's window,
-- read from the batch first; the other partitions are neither planned nor
-- locked. The counts and rows are an unpruned append's in every case.
CREATE FUNCTION ap_locks(parent regclass) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(DISTINCT c.relname, ', ' ORDER BY c.relname), 'none')
    FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
   WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND c.relispartition AND c.relkind = 'r'
     AND parent IN (SELECT a.relid FROM pg_partition_ancestors(c.oid) a)
$$;

-- A log with a primary key (day, id): the batch's days.
CREATE TABLE ap_keyed (day date NOT NULL, id int NOT NULL, payload text, PRIMARY KEY (day, id)) PARTITION BY RANGE (day);
SELECT format('CREATE TABLE ap_keyed_%s PARTITION OF ap_keyed FOR VALUES FROM (%L) TO (%L)',
              to_char(date '2024-07-01' + i, 'MMDD'), date '2024-07-01' + i, date '2024-07-01' + i + 1)
  FROM generate_series(0, 19) i \gexec
INSERT INTO ap_keyed SELECT date '2024-07-01' + d, g, 'p' || g FROM generate_series(0, 19) d, generate_series(1, 4) g;
BEGIN;
SELECT * FROM idem.append_query('ap_keyed',
  'SELECT ''2024-07-08''::date AS day, g AS id, ''p'' || g AS payload FROM generate_series(3, 6) g', '{day,id}');
SELECT ap_locks('ap_keyed');
COMMIT;
-- Replayed, with one event back with other content: the error names it.
SELECT show_error($$SELECT * FROM idem.append_query('ap_keyed',
  'SELECT ''2024-07-08''::date AS day, g AS id, ''q'' || g AS payload FROM generate_series(6, 6) g', '{day,id}')$$);
SELECT * FROM idem.append_query('ap_keyed',
  'SELECT ''2024-07-08''::date AS day, g AS id, ''p'' || g AS payload FROM generate_series(3, 6) g', '{day,id}');

-- A log without a unique index, read within two days of the batch.
CREATE TABLE ap_log (day date NOT NULL, id int NOT NULL, payload text) PARTITION BY RANGE (day);
SELECT format('CREATE TABLE ap_log_%s PARTITION OF ap_log FOR VALUES FROM (%L) TO (%L)',
              to_char(date '2024-07-01' + i, 'MMDD'), date '2024-07-01' + i, date '2024-07-01' + i + 1)
  FROM generate_series(0, 19) i \gexec
INSERT INTO ap_log SELECT date '2024-07-01' + d, d * 10 + g, 'p' FROM generate_series(0, 19) d, generate_series(1, 4) g;
-- Events of 2024-07-10 and 11; 94 is a replay of an event of 2024-07-10.
BEGIN;
SELECT * FROM idem.append_query('ap_log',
  'SELECT * FROM (VALUES (''2024-07-10''::date, 94, ''p''), (''2024-07-11''::date, 500, ''p'')) v(day, id, payload)',
  '{id}', within => '2 days');
SELECT ap_locks('ap_log');
COMMIT;
-- A replay that came later than within: not found, appended again (what
-- within means, pruned or not).
SELECT * FROM idem.append_query('ap_log', 'SELECT ''2024-07-15''::date AS day, 11 AS id, ''p'' AS payload',
  '{id}', within => '2 days');
SELECT day, id FROM ap_log WHERE id IN (11, 94, 500) ORDER BY id, day;

-- A batch whose days change when it is read again (volatile: a sequence
-- decides): the values read first miss its rows, the statement notices and
-- runs again over every partition; the result is an unpruned append's.
CREATE SEQUENCE ap_seq;
SELECT * FROM idem.append_query('ap_keyed',
  $$SELECT CASE WHEN nextval('ap_seq') = 1 THEN '2024-07-03'::date ELSE '2024-07-04'::date END AS day,
           2 AS id, 'p2' AS payload$$, '{day,id}');
-- Within: read first, the batch is of 2024-07-03; appended, it is of
-- 2024-07-20, whose event 192 is then found (an append that kept to the
-- first window would have written it twice).
CREATE SEQUENCE ap_seq2;
SELECT * FROM idem.append_query('ap_log',
  $$SELECT CASE WHEN nextval('ap_seq2') = 1 THEN '2024-07-03'::date ELSE '2024-07-20'::date END AS day,
           192 AS id, 'p' AS payload$$, '{id}', within => '1 day');
SELECT day, id FROM ap_log WHERE id = 192 ORDER BY day;

-- A NULL key in the batch: the same error as ever.
SELECT show_error($$SELECT * FROM idem.append_query('ap_keyed', 'SELECT NULL::date AS day, 1 AS id, ''p'' AS payload', '{day,id}')$$);

DROP TABLE ap_keyed, ap_log;
DROP SEQUENCE ap_seq, ap_seq2;
DROP FUNCTION ap_locks(regclass);
