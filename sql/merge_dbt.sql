-- dbt's incremental merge, translated one to one (issue 24): unique_key
-- single and composite, merge_update_columns (the key included),
-- merge_exclude_columns, incremental predicates through merge_query,
-- on_schema_change. Every scenario ends with the replay of its last batch,
-- which must write nothing: no row inserted or updated, and not one row of
-- the target rewritten or locked (its ctid, xmin and xmax as before).
-- dbt's __dbt_tmp relation has no index: neither have the sources here.

-- dbt_replay(target, merge): runs the merge and returns its counts and how
-- many target rows have another ctid, xmin or xmax afterwards.
CREATE FUNCTION dbt_replay(target regclass, merge_sql text)
  RETURNS TABLE(inserted bigint, updated bigint, deleted bigint, unchanged bigint, stale bigint,
                rows_rewritten_or_locked bigint)
  LANGUAGE plpgsql AS $$
DECLARE
  versions text := format('SELECT array_agg(ctid::text || '' '' || xmin::text || '' '' || xmax::text) FROM %s', target);
  before text[];
  after text[];
BEGIN
  EXECUTE versions INTO before;
  EXECUTE 'SELECT * FROM (' || merge_sql || ') AS m' INTO inserted, updated, deleted, unchanged, stale;
  EXECUTE versions INTO after;
  SELECT count(*) INTO rows_rewritten_or_locked FROM unnest(after) AS v(x) WHERE NOT (v.x = ANY (before));
  RETURN NEXT;
END $$;

-- unique_key='id': the first run inserts, the next batch updates one row
-- and inserts one, its replay writes nothing.
CREATE TABLE d_orders (id int PRIMARY KEY, status text, amount numeric(12,2));
CREATE TABLE d_orders__dbt_tmp (id int, status text, amount numeric(12,2));
INSERT INTO d_orders__dbt_tmp VALUES (1, 'placed', 10), (2, 'placed', 20), (3, 'placed', 30);
SELECT * FROM idem.merge('d_orders', 'd_orders__dbt_tmp');
TRUNCATE d_orders__dbt_tmp;
INSERT INTO d_orders__dbt_tmp VALUES (2, 'shipped', 20), (3, 'placed', 30), (4, 'placed', 40);
SELECT * FROM idem.merge('d_orders', 'd_orders__dbt_tmp');
SELECT * FROM dbt_replay('d_orders', $$SELECT * FROM idem.merge('d_orders', 'd_orders__dbt_tmp')$$);
SELECT * FROM d_orders ORDER BY id;

-- unique_key=['tenant', 'id']: a composite key (the target's primary key,
-- named explicitly as dbt does). The same id in two tenants is two rows.
CREATE TABLE d_accounts (tenant text, id int, name text, PRIMARY KEY (tenant, id));
CREATE TABLE d_accounts__dbt_tmp (tenant text, id int, name text);
INSERT INTO d_accounts__dbt_tmp VALUES ('a', 1, 'ann'), ('b', 1, 'bob'), ('a', 2, 'amy');
SELECT * FROM idem.merge('d_accounts', 'd_accounts__dbt_tmp', key => '{tenant,id}');
TRUNCATE d_accounts__dbt_tmp;
INSERT INTO d_accounts__dbt_tmp VALUES ('b', 1, 'bobby'), ('a', 1, 'ann'), ('b', 2, 'ben');
SELECT * FROM idem.merge('d_accounts', 'd_accounts__dbt_tmp', key => '{tenant,id}');
SELECT * FROM dbt_replay('d_accounts', $$SELECT * FROM idem.merge('d_accounts', 'd_accounts__dbt_tmp', key => '{tenant,id}')$$);
SELECT * FROM d_accounts ORDER BY tenant, id;

-- merge_update_columns=['id', 'msg'] (dbt's own adapter test lists the key):
-- the key is accepted and nothing is written for it; color is not updated,
-- and a row that differs only in color is unchanged.
CREATE TABLE d_msgs (id int PRIMARY KEY, msg text, color text);
CREATE TABLE d_msgs__dbt_tmp (id int, msg text, color text);
INSERT INTO d_msgs__dbt_tmp VALUES (1, 'hello', 'blue'), (2, 'goodbye', 'red');
SELECT * FROM idem.merge('d_msgs', 'd_msgs__dbt_tmp', columns => '{id,msg}');
TRUNCATE d_msgs__dbt_tmp;
INSERT INTO d_msgs__dbt_tmp VALUES (1, 'hey', 'cyan'), (2, 'goodbye', 'green'), (3, 'anyway', 'purple');
SELECT * FROM idem.merge('d_msgs', 'd_msgs__dbt_tmp', columns => '{id,msg}');
SELECT * FROM dbt_replay('d_msgs', $$SELECT * FROM idem.merge('d_msgs', 'd_msgs__dbt_tmp', columns => '{id,msg}')$$);
-- 1 has the new msg and its old color; 2 keeps red; 3 was inserted whole.
SELECT * FROM d_msgs ORDER BY id;
-- A key named in columns changes nothing: the same as without it.
SELECT * FROM idem.merge('d_msgs', 'd_msgs__dbt_tmp', columns => '{msg}');

-- merge_exclude_columns=['first_seen']: an insert writes every column, an
-- update leaves first_seen alone, and a row that differs only in first_seen
-- is unchanged and not written.
CREATE TABLE d_users (id int PRIMARY KEY, email text, first_seen date, visits int);
CREATE TABLE d_users__dbt_tmp (id int, email text, first_seen date, visits int);
INSERT INTO d_users__dbt_tmp VALUES (1, 'a@x', '2024-01-01', 1), (2, 'b@x', '2024-01-01', 1);
SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp', exclude_columns => '{first_seen}');
TRUNCATE d_users__dbt_tmp;
-- The next day's batch: every row has today as first_seen (as a model that
-- stamps it would); 1 visited again, 2 did not, 3 is new.
INSERT INTO d_users__dbt_tmp VALUES (1, 'a@x', '2024-01-02', 2), (2, 'b@x', '2024-01-02', 1), (3, 'c@x', '2024-01-02', 1);
SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp', exclude_columns => '{first_seen}');
SELECT * FROM dbt_replay('d_users', $$SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp', exclude_columns => '{first_seen}')$$);
-- 1 and 2 keep the day they were first seen; 3 has its own.
SELECT * FROM d_users ORDER BY id;
-- A dry run plans the same.
SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp', exclude_columns => '{first_seen}', dry_run => true);
-- Without the exclusion, first_seen counts: 1 and 2 are rewritten (3
-- already has the batch's date).
SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp');
-- merge_query takes it too, positional after dry_run; excluding every
-- non-key column leaves an update nothing to write: every existing key is
-- unchanged, a new key is inserted whole.
SELECT * FROM idem.merge_query('d_users', $$SELECT 3 AS id, 'new@x' AS email, date '2020-01-01' AS first_seen, 9 AS visits
                                             UNION ALL SELECT 4, 'd@x', date '2024-01-03', 1$$,
                               NULL, NULL, NULL, false, NULL, NULL, false, false, '{email,first_seen,visits}');
SELECT * FROM d_users WHERE id IN (3, 4) ORDER BY id;
-- A target column the source lacks may be excluded (it is not written
-- anyway); an empty list excludes nothing.
SELECT * FROM idem.merge_query('d_users', 'SELECT 4 AS id, ''d@x'' AS email, 2 AS visits', exclude_columns => '{first_seen}');
SELECT * FROM idem.merge_query('d_users', 'SELECT 4 AS id, ''d@x'' AS email, 3 AS visits', exclude_columns => '{}');
-- Duplicates are still checked on every source column: two rows of one key
-- that differ only in an excluded column would insert different rows.
SELECT show_error($$SELECT * FROM idem.merge_query('d_users', 'SELECT 5 AS id, ''e@x'' AS email, date ''2024-01-01'' AS first_seen, 1 AS visits
  UNION ALL SELECT 5, ''e@x'', date ''2024-01-02'', 1', exclude_columns => '{first_seen}')$$);

-- incremental_predicates / is_incremental(): the batch is whatever the
-- query selects; here only the events of the last day are read.
CREATE TABLE d_events (id int PRIMARY KEY, day date, kind text);
CREATE TABLE d_events_raw (id int, day date, kind text);
INSERT INTO d_events_raw SELECT g, date '2024-01-01' + (g % 3), 'k' || g FROM generate_series(1, 9) g;
SELECT * FROM idem.merge_query('d_events', 'SELECT * FROM d_events_raw');
UPDATE d_events_raw SET kind = kind || '!' WHERE id IN (2, 3);  -- day 3 and day 1
INSERT INTO d_events_raw VALUES (10, '2024-01-03', 'k10');
SELECT * FROM idem.merge_query('d_events', $$SELECT * FROM d_events_raw WHERE day >= date '2024-01-03'$$);
SELECT * FROM dbt_replay('d_events', $$SELECT * FROM idem.merge_query('d_events', 'SELECT * FROM d_events_raw WHERE day >= date ''2024-01-03''')$$);
-- 2 was updated; 3 (day 1) was outside the predicate and keeps its kind.
SELECT * FROM d_events WHERE id IN (2, 3, 10) ORDER BY id;

-- on_schema_change: the model gains a column. Schema drift is an error
-- (dbt's 'fail'), with the ways out in its HINT.
ALTER TABLE d_orders__dbt_tmp ADD COLUMN channel text;
UPDATE d_orders__dbt_tmp SET channel = 'web';
SELECT show_error($$SELECT * FROM idem.merge('d_orders', 'd_orders__dbt_tmp')$$);
-- 'ignore': columns names what an update writes, the new column is not read.
SELECT * FROM dbt_replay('d_orders', $$SELECT * FROM idem.merge('d_orders', 'd_orders__dbt_tmp', columns => '{status,amount}')$$);
-- 'append_new_columns': the target gains the column; the next merge fills it
-- (every row of the batch differs in it now), and its replay writes nothing.
ALTER TABLE d_orders ADD COLUMN channel text;
SELECT * FROM idem.merge('d_orders', 'd_orders__dbt_tmp');
SELECT * FROM dbt_replay('d_orders', $$SELECT * FROM idem.merge('d_orders', 'd_orders__dbt_tmp')$$);
SELECT * FROM d_orders ORDER BY id;

-- Errors, each with its SQLSTATE, DETAIL and HINT.
-- columns and exclude_columns together:
SELECT show_error($$SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp', columns => '{email}', exclude_columns => '{first_seen}')$$);
-- a name the target lacks (exactly as written, case included):
SELECT show_error($$SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp', exclude_columns => '{nope}')$$);
SELECT show_error($$SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp', exclude_columns => '{Email}')$$);
-- a key column: an insert writes it, an update never does:
SELECT show_error($$SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp', exclude_columns => '{id}')$$);
SELECT show_error($$SELECT * FROM idem.merge('d_accounts', 'd_accounts__dbt_tmp', key => '{tenant,id}', exclude_columns => '{name,tenant}')$$);
-- the version column decides which row is newer:
SELECT show_error($$SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp', version_column => 'visits', exclude_columns => '{visits}')$$);
-- a name given twice is harmless (as in idem.checksum); a NULL element is not:
SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp', exclude_columns => '{first_seen,first_seen}');
SELECT show_error($$SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp', exclude_columns => ARRAY['email', NULL])$$);
-- Nothing of the failed calls was written.
SELECT * FROM dbt_replay('d_users', $$SELECT * FROM idem.merge('d_users', 'd_users__dbt_tmp', exclude_columns => '{first_seen}')$$);
