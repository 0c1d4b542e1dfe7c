-- Tie-breakers (issue 44, item 6): CDC rows often share an updated_at;
-- version_column may name several columns, compared in order, the next
-- breaking the ties of the one before (merge, and snapshot's timestamp
-- strategy through updated_at). Given as a text[] literal.
CREATE TABLE tb_accounts (id int PRIMARY KEY, balance int, updated_at timestamptz, _loaded_at timestamptz);
CREATE TABLE tb_cdc (id int, balance int, updated_at timestamptz, _loaded_at timestamptz, op text);
INSERT INTO tb_cdc VALUES
  (1, 10, '2024-07-07 10:00+00', '2024-07-07 10:05+00', 'u'),
  (1, 11, '2024-07-07 10:00+00', '2024-07-07 10:06+00', 'u'),   -- same updated_at, loaded later: wins
  (2, 20, '2024-07-07 09:00+00', '2024-07-07 10:05+00', 'u'),
  (2, 21, '2024-07-07 08:00+00', '2024-07-07 10:09+00', 'u');   -- older updated_at, loaded later: loses
-- One column alone cannot choose between key 1's rows.
SELECT show_error($$SELECT * FROM idem.merge_query('tb_accounts', 'SELECT id, balance, updated_at, _loaded_at FROM tb_cdc',
  version_column => 'updated_at')$$);
SELECT * FROM idem.merge_query('tb_accounts', 'SELECT id, balance, updated_at, _loaded_at FROM tb_cdc',
  version_column => '{updated_at,_loaded_at}');
SELECT * FROM tb_accounts ORDER BY id;
-- The rerun, and a late replay of older rows: unchanged and stale.
SELECT * FROM idem.merge_query('tb_accounts', 'SELECT id, balance, updated_at, _loaded_at FROM tb_cdc',
  version_column => '{updated_at,_loaded_at}');
SELECT * FROM idem.merge_query('tb_accounts',
  $$SELECT 1 AS id, 99 AS balance, '2024-07-07 10:00+00'::timestamptz AS updated_at, '2024-07-07 10:01+00'::timestamptz AS _loaded_at$$,
  version_column => '{updated_at,_loaded_at}');
-- The same pair of versions with other content is ID006; a NULL in either
-- column 23502.
SELECT show_error($$SELECT * FROM idem.merge_query('tb_accounts',
  'SELECT 1 AS id, 12 AS balance, ''2024-07-07 10:00+00''::timestamptz AS updated_at, ''2024-07-07 10:06+00''::timestamptz AS _loaded_at',
  version_column => '{updated_at,_loaded_at}')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('tb_accounts',
  'SELECT 3 AS id, 1 AS balance, now() AS updated_at, NULL::timestamptz AS _loaded_at',
  version_column => '{updated_at,_loaded_at}')$$);
-- Deletes and tombstones: a key deleted at (t, l) stays deleted for a
-- replay at a lower pair, comes back at a higher one.
SELECT * FROM idem.merge_query('tb_accounts',
  $$SELECT 2 AS id, NULL::int AS balance, '2024-07-07 11:00+00'::timestamptz AS updated_at, '2024-07-07 11:00+00'::timestamptz AS _loaded_at, true AS gone$$,
  version_column => '{updated_at,_loaded_at}', delete_column => 'gone');
SELECT key_data, version FROM idem.tombstones WHERE target = 'tb_accounts'::regclass;
SELECT * FROM idem.merge_query('tb_accounts',
  $$SELECT 2 AS id, 22 AS balance, '2024-07-07 11:00+00'::timestamptz AS updated_at, '2024-07-07 10:59+00'::timestamptz AS _loaded_at, false AS gone$$,
  version_column => '{updated_at,_loaded_at}', delete_column => 'gone');
SELECT * FROM idem.merge_query('tb_accounts',
  $$SELECT 2 AS id, 23 AS balance, '2024-07-07 11:00+00'::timestamptz AS updated_at, '2024-07-07 11:01+00'::timestamptz AS _loaded_at, false AS gone$$,
  version_column => '{updated_at,_loaded_at}', delete_column => 'gone');
SELECT * FROM tb_accounts ORDER BY id;
-- Errors: an empty list, a name twice, a name neither side has, a type
-- without an ordering; a one-element list is one column.
SELECT show_error($$SELECT * FROM idem.merge_query('tb_accounts', 'SELECT * FROM tb_accounts', version_column => '{}')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('tb_accounts', 'SELECT * FROM tb_accounts', version_column => '{updated_at,updated_at}')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('tb_accounts', 'SELECT * FROM tb_accounts', version_column => '{updated_at,nope}')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('tb_accounts', 'SELECT * FROM tb_accounts', version_column => '{updated_at,NULL}')$$);
SELECT * FROM idem.merge_query('tb_accounts', 'SELECT * FROM tb_accounts', version_column => '{updated_at}');
SELECT * FROM idem.merge_query('tb_accounts', 'SELECT * FROM tb_accounts', version_column => ARRAY['updated_at', '_loaded_at']::text);
CREATE TABLE tb_points (id int PRIMARY KEY, v int, p point);
SELECT show_error($$SELECT * FROM idem.merge_query('tb_points', 'SELECT 1 AS id, 1 AS v, point(1, 1) AS p', version_column => '{v,p}')$$);
-- A column whose name starts with a brace is written quoted in the list.
CREATE TABLE tb_odd (id int PRIMARY KEY, "{v" int, w int);
SELECT * FROM idem.merge_query('tb_odd', 'SELECT 1 AS id, 1 AS "{v", 1 AS w', version_column => '{"{v",w}');
SELECT * FROM idem.merge_query('tb_odd', 'SELECT 1 AS id, 0 AS "{v", 9 AS w', version_column => '{"{v",w}');
SELECT * FROM tb_odd;

-- snapshot, timestamp strategy: the same order through updated_at.
CREATE TABLE tb_hist (id int NOT NULL, balance int, updated_at timestamptz, _loaded_at timestamptz,
                      valid_from timestamptz NOT NULL, valid_to timestamptz);
SELECT idem.snapshot_prepare('tb_hist', '{id}') IS NOT NULL AS prepared;
SELECT * FROM idem.snapshot_query('tb_hist', 'SELECT id, balance, updated_at, _loaded_at FROM tb_cdc', '{id}',
  strategy => 'timestamp', updated_at => '{updated_at,_loaded_at}', as_of => '2024-07-08');
SELECT * FROM idem.snapshot_query('tb_hist', 'SELECT id, balance, updated_at, _loaded_at FROM tb_cdc', '{id}',
  strategy => 'timestamp', updated_at => '{updated_at,_loaded_at}', as_of => '2024-07-09');
SELECT id, balance, valid_to IS NULL AS current FROM tb_hist ORDER BY id, valid_from;
SELECT show_error($$SELECT * FROM idem.snapshot_query('tb_hist', 'SELECT id, balance, updated_at, _loaded_at FROM tb_cdc', '{id}',
  strategy => 'timestamp', updated_at => '{updated_at,updated_at}')$$);

DROP TABLE tb_accounts, tb_cdc, tb_points, tb_odd, tb_hist;
