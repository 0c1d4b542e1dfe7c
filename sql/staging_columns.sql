-- Staging tables and schema drift (issue 44, items 1 and 3): a staging
-- table's metadata columns (_loaded_at, _file, _batch_id) the target lacks,
-- left out with exclude_columns; a column of the target named there, left
-- alone; a new source column under on_schema_change 'fail', 'ignore' and
-- 'append_new_columns', in merge, append and snapshot.
CREATE SCHEMA dw;
CREATE TABLE dw.accounts (id int PRIMARY KEY, name text, balance numeric(12,2));
CREATE TABLE stg_accounts (id int, name text, balance numeric(12,2),
                           _loaded_at timestamptz, _file text, _batch_id int);
INSERT INTO stg_accounts VALUES (1, 'ann', 10, '2024-07-07 01:00+00', 'a.csv', 1),
                                (2, 'bob', 20, '2024-07-07 01:00+00', 'a.csv', 1);

-- The first call of a staging pipeline: the error names every metadata
-- column and the option that leaves them out.
SELECT show_error($$SELECT * FROM idem.merge('dw.accounts', 'stg_accounts')$$);
-- Left out of the batch: merged, and the reload of the same rows with new
-- metadata is unchanged; two rows of one key that differ only in metadata
-- are the same row, not a conflict.
SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{_loaded_at,_file,_batch_id}');
UPDATE stg_accounts SET _loaded_at = _loaded_at + interval '1 day', _batch_id = 2;
INSERT INTO stg_accounts VALUES (1, 'ann', 10, '2024-07-09 01:00+00', 'b.csv', 3);
SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{_loaded_at,_file,_batch_id}');
-- The same through merge_query.
SELECT * FROM idem.merge_query('dw.accounts', 'SELECT * FROM stg_accounts', key => '{id}',
                               exclude_columns => '{_loaded_at,_file,_batch_id}');
-- A target column named too is left alone by updates (dbt's
-- merge_exclude_columns), whether or not the source has it.
ALTER TABLE dw.accounts ADD COLUMN note text DEFAULT 'new';
UPDATE dw.accounts SET note = 'by hand' WHERE id = 1;
DELETE FROM stg_accounts WHERE _batch_id = 3;
UPDATE stg_accounts SET balance = balance + 1;
SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{_loaded_at,_file,_batch_id,note}');
SELECT * FROM dw.accounts ORDER BY id;
-- A name neither side has, the key, the version and the delete column.
SELECT show_error($$SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{_loaded_at,_file,_batch_id,_fiel}')$$);
SELECT show_error($$SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{id}')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('dw.accounts', 'SELECT *, false AS gone FROM stg_accounts',
  delete_column => 'gone', exclude_columns => '{_loaded_at,_file,_batch_id,gone}')$$);
SELECT show_error($$SELECT * FROM idem.merge_query('dw.accounts', 'SELECT *, 1 AS v FROM stg_accounts',
  version_column => 'v', exclude_columns => '{v}')$$);
-- The delete flag is the merge's own source column, never drift.
SELECT * FROM idem.merge_query('dw.accounts', 'SELECT *, id = 2 AS gone FROM stg_accounts',
                               delete_column => 'gone', exclude_columns => '{_loaded_at,_file,_batch_id}');
INSERT INTO dw.accounts VALUES (2, 'bob', 21, 'new');

-- on_schema_change: a new source column.
ALTER TABLE stg_accounts ADD COLUMN region text;
UPDATE stg_accounts SET region = 'eu';
SELECT show_error($$SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{_loaded_at,_file,_batch_id}')$$);
SELECT show_error($$SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', on_schema_change => 'sync_all_columns')$$);
SELECT show_error($$SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', on_schema_change => NULL)$$);
-- 'ignore': left out of the batch.
SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{_loaded_at,_file,_batch_id}',
                         on_schema_change => 'ignore');
-- 'append_new_columns' in a dry run adds nothing.
SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{_loaded_at,_file,_batch_id}',
                         on_schema_change => 'append_new_columns', dry_run => true);
SELECT count(*) AS region_columns FROM pg_attribute WHERE attrelid = 'dw.accounts'::regclass AND attname = 'region';
-- Rolled back with the caller's transaction.
BEGIN;
SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{_loaded_at,_file,_batch_id}',
                         on_schema_change => 'append_new_columns');
ROLLBACK;
SELECT count(*) AS region_columns FROM pg_attribute WHERE attrelid = 'dw.accounts'::regclass AND attname = 'region';
-- Added (its type and collation from the source), written, and the rerun is
-- unchanged.
ALTER TABLE stg_accounts ADD COLUMN "Code ""x""" text COLLATE "C";
UPDATE stg_accounts SET "Code ""x""" = 'c' || id;
SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{_loaded_at,_file,_batch_id}',
                         on_schema_change => 'append_new_columns');
SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{_loaded_at,_file,_batch_id}',
                         on_schema_change => 'append_new_columns');
SELECT attname, format_type(atttypid, atttypmod) AS type, collname
  FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation AND a.attcollation <> 100
 WHERE attrelid = 'dw.accounts'::regclass AND attnum > 0 ORDER BY attnum;
SELECT * FROM dw.accounts ORDER BY id;
-- A role that may write the target but does not own it cannot add a
-- column: 42501, and nothing was written.
CREATE ROLE stg_loader;
GRANT USAGE ON SCHEMA dw TO stg_loader;
GRANT SELECT, INSERT, UPDATE ON dw.accounts TO stg_loader;
GRANT SELECT ON stg_accounts TO stg_loader;
ALTER TABLE stg_accounts ADD COLUMN tier int;
UPDATE stg_accounts SET tier = 1, balance = balance + 1;
SET ROLE stg_loader;
SELECT show_error($$SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{_loaded_at,_file,_batch_id}',
                         on_schema_change => 'append_new_columns')$$);
-- with 'ignore' it merges what the target has.
SELECT * FROM idem.merge('dw.accounts', 'stg_accounts', exclude_columns => '{_loaded_at,_file,_batch_id}',
                         on_schema_change => 'ignore');
RESET ROLE;
SELECT id, balance FROM dw.accounts ORDER BY id;

-- A partitioned target: the column reaches every partition.
CREATE TABLE dw.sales (day date NOT NULL, store int NOT NULL, amount int, PRIMARY KEY (day, store))
  PARTITION BY RANGE (day);
CREATE TABLE dw.sales_0707 PARTITION OF dw.sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE dw.sales_0708 PARTITION OF dw.sales FOR VALUES FROM ('2024-07-08') TO ('2024-07-09');
SELECT * FROM idem.merge_query('dw.sales',
  $$SELECT '2024-07-07'::date + g % 2 AS day, g AS store, g * 10 AS amount, 'pos' AS channel, now() AS _loaded_at
      FROM generate_series(1, 4) g$$, exclude_columns => '{_loaded_at}', on_schema_change => 'append_new_columns');
SELECT tableoid::regclass AS partition, day, store, amount, channel FROM dw.sales ORDER BY day, store;

-- append: the same options.
CREATE TABLE dw.events (event_id int PRIMARY KEY, payload text);
SELECT show_error($$SELECT * FROM idem.append_query('dw.events', 'SELECT 1 AS event_id, ''a'' AS payload, now() AS _loaded_at, 7 AS _batch_id')$$);
SELECT * FROM idem.append_query('dw.events', 'SELECT 1 AS event_id, ''a'' AS payload, now() AS _loaded_at, 7 AS _batch_id',
                                exclude_columns => '{_loaded_at,_batch_id}');
SELECT * FROM idem.append_query('dw.events', 'SELECT 1 AS event_id, ''a'' AS payload, now() AS _loaded_at, 8 AS _batch_id',
                                exclude_columns => '{_loaded_at,_batch_id}');
SELECT * FROM idem.append_query('dw.events', 'SELECT 2 AS event_id, ''b'' AS payload, ''web'' AS source, 9 AS _batch_id',
                                exclude_columns => '{_batch_id}', on_schema_change => 'append_new_columns');
SELECT * FROM idem.append_query('dw.events', 'SELECT 3 AS event_id, ''c'' AS payload, ''app'' AS device',
                                on_schema_change => 'ignore');
SELECT * FROM dw.events ORDER BY event_id;
SELECT show_error($$SELECT * FROM idem.append_query('dw.events', 'SELECT 4 AS event_id', exclude_columns => '{event_id}')$$);

-- snapshot: metadata left out, a new column added to the history table.
CREATE TABLE dw.customers_history (id int NOT NULL, name text, valid_from timestamptz NOT NULL, valid_to timestamptz);
SELECT idem.snapshot_prepare('dw.customers_history', '{id}') IS NOT NULL AS prepared;
SELECT show_error($$SELECT * FROM idem.snapshot_query('dw.customers_history', 'SELECT 1 AS id, ''ann'' AS name, now() AS _loaded_at', '{id}')$$);
SELECT * FROM idem.snapshot_query('dw.customers_history', 'SELECT 1 AS id, ''ann'' AS name, now() AS _loaded_at', '{id}',
                                  exclude_columns => '{_loaded_at}', as_of => '2024-07-07');
SELECT * FROM idem.snapshot_query('dw.customers_history', 'SELECT 1 AS id, ''ann'' AS name, now() AS _loaded_at', '{id}',
                                  exclude_columns => '{_loaded_at}', as_of => '2024-07-08');
-- A new compared column opens a version where its value is not NULL.
SELECT * FROM idem.snapshot_query('dw.customers_history', 'SELECT 1 AS id, ''ann'' AS name, ''gold'' AS tier', '{id}',
                                  on_schema_change => 'append_new_columns', as_of => '2024-07-09');
SELECT * FROM idem.snapshot_query('dw.customers_history', 'SELECT 1 AS id, ''ann'' AS name, ''gold'' AS tier', '{id}',
                                  on_schema_change => 'append_new_columns', as_of => '2024-07-10');
SELECT id, name, tier, valid_from, valid_to FROM dw.customers_history ORDER BY valid_from;

DROP TABLE dw.accounts, dw.sales, dw.events, dw.customers_history, stg_accounts;
DROP SCHEMA dw;
DROP ROLE stg_loader;
