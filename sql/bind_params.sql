-- Bind parameters (issue 44, item 2): params => idem.params(v1, v2, ...)
-- binds each value, of its own type, to $1, $2, ... of a function's SQL text
-- (query, predicate, audit), never splicing it into the text.

-- What idem.params holds: the types and each value's canonical text, so a
-- value made under one session's settings reads back the same in any.
SELECT idem.params('2024-07-07'::date, 42, 'untyped', NULL::int, 1.50::numeric, '{1,2}'::int[], true);
SELECT idem.params(VARIADIC ARRAY['a', 'b']);
SET DateStyle = 'SQL, DMY';
SET TimeZone = 'America/New_York';
CREATE TABLE bp_saved AS SELECT idem.params('2024-07-08'::date, '2024-07-08 10:00+02'::timestamptz) AS p;
SELECT p FROM bp_saved;
RESET DateStyle;
RESET TimeZone;
SELECT show_error($$SELECT idem.params(ROW(1, 2))$$);
SELECT show_error($$SELECT idem.params(VARIADIC NULL::int[])$$);

-- merge_query: the values are data, whatever they hold; a "$1" inside a
-- string literal of the query stays text (the statement's own $1 comes
-- before the caller's, which are renumbered by PostgreSQL's lexer).
CREATE TABLE bp_accounts (id int PRIMARY KEY, name text, note text);
SELECT * FROM idem.merge_query('bp_accounts',
  $$SELECT $1 AS id, $2 AS name, '$1 stays text' AS note$$,
  params => idem.params(1, $q$x'); DROP TABLE bp_accounts; --$q$));
SELECT * FROM idem.merge_query('bp_accounts',
  $$SELECT $1 AS id, $2 AS name, '$1 stays text' AS note$$,
  params => idem.params(1, $q$x'); DROP TABLE bp_accounts; --$q$));
SELECT * FROM bp_accounts;
-- A parameter the params do not give, and none given at all.
SELECT show_error($$SELECT * FROM idem.merge_query('bp_accounts', 'SELECT $1 AS id, $3 AS name, NULL AS note',
  params => idem.params(2, 'b'))$$);
SELECT show_error($$SELECT * FROM idem.merge_query('bp_accounts', 'SELECT $1 AS id, ''b'' AS name, NULL AS note')$$);
-- A value of another type than the query needs is PostgreSQL's own error.
SELECT show_error($$SELECT * FROM idem.merge_query('bp_accounts', 'SELECT $1 AS id, ''b'' AS name, NULL AS note',
  params => idem.params('2024-07-07'::date))$$);
-- params made by hand: as many types as values, none NULL, each one that exists.
SELECT show_error($$SELECT * FROM idem.merge_query('bp_accounts', 'SELECT $1 AS id',
  params => ROW('{int4,text}', '{1}')::idem.query_params)$$);
SELECT show_error($$SELECT * FROM idem.merge_query('bp_accounts', 'SELECT $1 AS id',
  params => ROW('{NULL}', '{1}')::idem.query_params)$$);
SELECT show_error($$SELECT * FROM idem.merge_query('bp_accounts', 'SELECT $1 AS id',
  params => ROW(ARRAY[4294967295::oid::regtype], '{1}')::idem.query_params)$$);
-- The run history records the values (the query's text is the caller's).
SELECT function_name, params FROM idem.run_history WHERE target = 'public.bp_accounts' ORDER BY id;

-- append_query and snapshot_query.
CREATE TABLE bp_events (event_id int PRIMARY KEY, day date, payload text);
SELECT * FROM idem.append_query('bp_events', 'SELECT g AS event_id, $1 AS day, $2 || g AS payload FROM generate_series(1, $3) g',
  params => idem.params('2024-07-07'::date, 'event ', 3));
SELECT * FROM idem.append_query('bp_events', 'SELECT g AS event_id, $1 AS day, $2 || g AS payload FROM generate_series(1, $3) g',
  params => idem.params('2024-07-07'::date, 'event ', 4), within => NULL);
CREATE TABLE bp_hist (id int NOT NULL, name text, valid_from timestamptz NOT NULL, valid_to timestamptz);
SELECT idem.snapshot_prepare('bp_hist', '{id}') IS NOT NULL AS prepared;
SELECT * FROM idem.snapshot_query('bp_hist', 'SELECT id, name FROM bp_accounts WHERE id = $1', '{id}',
  as_of => '2024-07-07', params => idem.params(1));
SELECT * FROM idem.snapshot_query('bp_hist', 'SELECT id, name FROM bp_accounts WHERE id = $1', '{id}',
  as_of => '2024-07-08', params => idem.params(1));

-- replace_where: the predicate and the query share the values.
CREATE TABLE bp_daily (day date, store text, amount numeric);
SELECT * FROM idem.replace_where('bp_daily', 'day = $1',
  'SELECT day, ''s'' || event_id, event_id FROM bp_events WHERE day = $1', params => idem.params('2024-07-07'::date));
SELECT * FROM idem.replace_where('bp_daily', 'day = $1',
  'SELECT day, ''s'' || event_id, event_id FROM bp_events WHERE day = $1', params => idem.params('2024-07-07'::date));
SELECT show_error($$SELECT * FROM idem.replace_where('bp_daily', 'day = $2', 'SELECT NULL::date, NULL, NULL',
  params => idem.params('2024-07-07'::date))$$);

-- overwrite_partition, both modes, and the text overload.
CREATE TABLE bp_sales (day date NOT NULL, store text, amount numeric) PARTITION BY RANGE (day);
CREATE TABLE bp_sales_0707 PARTITION OF bp_sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
SELECT * FROM idem.overwrite_partition('bp_sales', '2024-07-07'::date,
  'SELECT day, store, amount FROM bp_daily WHERE day = $1 AND amount >= $2', params => idem.params('2024-07-07'::date, 2));
SELECT * FROM idem.overwrite_partition('bp_sales', '2024-07-07', 'SELECT day, store, amount FROM bp_daily WHERE day = $1',
  mode => 'swap', params => idem.params('2024-07-07'::date));
SELECT * FROM idem.overwrite_partition('bp_sales', '2024-07-07', 'SELECT day, store, amount FROM bp_daily WHERE day = $1',
  mode => 'swap', params => idem.params('2024-07-07'::date));
SELECT * FROM bp_sales ORDER BY store;

-- publish: the query and the audit.
SELECT idem.publish('bp_pub', 'SELECT * FROM bp_daily WHERE amount > $1',
  audit => 'SELECT count(*) = $2 FROM idem_candidate', params => idem.params(1, 3));
SELECT show_error($$SELECT idem.publish('bp_pub', 'SELECT * FROM bp_daily WHERE amount > $1',
  audit => 'SELECT count(*) = $2 FROM idem_candidate', params => idem.params(0, 3))$$);
SELECT * FROM bp_pub ORDER BY store;

-- checksum_query.
SELECT idem.checksum_query('SELECT * FROM bp_daily WHERE amount > $1', idem.params(1))
     = idem.checksum_query('SELECT * FROM bp_daily WHERE amount > 1') AS same_rows_same_checksum;

-- The history caps what it keeps: 20 values, 200 characters each.
SELECT * FROM idem.merge_query('bp_accounts',
  'SELECT $1::int AS id, $2 AS name, $3 AS note',
  params => (SELECT idem.params(VARIADIC array_agg(CASE WHEN g = 1 THEN '9' WHEN g = 2 THEN repeat('é', 300) ELSE g::text END ORDER BY g))
               FROM generate_series(1, 25) g));
SELECT jsonb_array_length(params) AS entries, params -> 20 AS more, length(params -> 1 ->> 'value') AS second_length
  FROM idem.run_history WHERE target = 'public.bp_accounts' ORDER BY id DESC LIMIT 1;

-- Values come from a saved idem.params under other settings: the same date
-- and the same instant.
SET DateStyle = 'SQL, DMY';
SELECT * FROM idem.merge_query('bp_accounts',
  $$SELECT 3 AS id, to_char($1, 'YYYY-MM-DD') AS name, to_char($2 AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS note$$,
  params => (SELECT p FROM bp_saved));
RESET DateStyle;
SELECT * FROM bp_accounts WHERE id = 3;

DROP TABLE bp_saved, bp_accounts, bp_events, bp_hist, bp_daily, bp_sales;
DROP VIEW bp_pub;
DROP TABLE bp_pub__v1;
