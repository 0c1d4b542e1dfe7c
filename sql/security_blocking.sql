-- The security suite, third round (issue 41): ways for one role to block
-- another's jobs. Each block fails on 0.8.0.

-- 1. idem.snapshot_prepare took the history table's snapshot lock before any
-- privilege check and returned early when the index existed: a role with no
-- privilege on the table could hold that lock (in a prepared transaction,
-- for good) and make every idem.snapshot of its owner wait. Now it is
-- refused before any lock, and no function takes a unit lock on a table the
-- caller may not write.
CREATE ROLE blk_owner;
CREATE ROLE blk_attacker;
CREATE SCHEMA blk AUTHORIZATION blk_owner;
SET ROLE blk_owner;
CREATE TABLE blk.customers (id int PRIMARY KEY, name text);
INSERT INTO blk.customers VALUES (1, 'Ada');
CREATE TABLE blk.customers_hist (id int NOT NULL, name text, valid_from timestamptz NOT NULL, valid_to timestamptz);
SELECT idem.snapshot_prepare('blk.customers_hist', '{id}') IS NOT NULL AS prepared;
GRANT USAGE ON SCHEMA blk TO blk_attacker;
RESET ROLE;
SET ROLE blk_attacker;
BEGIN;
SELECT show_error($$SELECT idem.snapshot_prepare('blk.customers_hist', '{id}')$$);
SELECT count(*) AS idem_locks_held FROM pg_locks
 WHERE locktype = 'object' AND pid = pg_backend_pid()
   AND classid = (SELECT oid FROM pg_extension WHERE extname = 'pg_idempotent');
COMMIT;
RESET ROLE;
-- With SELECT only (it may read the history, not write it): refused too.
GRANT SELECT ON blk.customers_hist TO blk_attacker;
SET ROLE blk_attacker;
SELECT show_error($$SELECT idem.snapshot_prepare('blk.customers_hist', '{id}')$$);
RESET ROLE;
-- The owner's snapshot runs.
SET ROLE blk_owner;
SELECT inserted FROM idem.snapshot('blk.customers_hist', 'blk.customers', '{id}', as_of => '2024-07-01');
RESET ROLE;

-- 2. idem.publish named each version table <name>__v<n>: a role with CREATE
-- on the dataset's schema created the next one's name first, and every
-- publish of the dataset failed with "relation already exists" for good.
-- Now a taken name is passed over for one no one can guess.
CREATE ROLE blk_publisher;
CREATE SCHEMA blkp AUTHORIZATION blk_publisher;
GRANT USAGE, CREATE ON SCHEMA blkp TO blk_attacker;
SELECT idem.grant_usage('blk_publisher', 'blkp.sales', 'dataset');
SET ROLE blk_attacker;
CREATE TABLE blkp.sales__v1 ();
CREATE TABLE blkp.sales__v2 ();
RESET ROLE;
SET ROLE blk_publisher;
SELECT idem.publish('blkp.sales', 'SELECT 1 AS n') AS version;
SELECT idem.publish('blkp.sales', 'SELECT 2 AS n') AS version;
SELECT * FROM blkp.sales;
SELECT version, relation::text ~ '^blkp\.sales__v[12]_[0-9a-f]{8}$' AS name_not_taken, is_current
  FROM idem.versions('blkp.sales') ORDER BY version;
RESET ROLE;
-- The planted tables are left alone.
SELECT count(*) AS planted_tables_left FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'blkp' AND c.relname IN ('sales__v1', 'sales__v2') AND pg_get_userbyid(c.relowner) = 'blk_attacker';

-- 3. Two long dataset names cut to one version-table name collided, and a
-- dataset name over 63 bytes could never be published (PostgreSQL cut the
-- view's name, and publish looked it up uncut): the second now gets a free
-- name, and the over-long one is refused.
SELECT idem.grant_usage('blk_publisher', 'blkp.' || repeat('x', 59) || 'a', 'dataset');
SELECT idem.grant_usage('blk_publisher', 'blkp.' || repeat('x', 59) || 'b', 'dataset');
SELECT idem.grant_usage('blk_publisher', 'blkp.' || repeat('x', 64), 'dataset');
SET ROLE blk_publisher;
SELECT idem.publish('blkp.' || repeat('x', 59) || 'a', 'SELECT 1 AS n') AS version_a;
SELECT idem.publish('blkp.' || repeat('x', 59) || 'b', 'SELECT 2 AS n') AS version_b;
SELECT (SELECT relation FROM idem.versions('blkp.' || repeat('x', 59) || 'a'))
    <> (SELECT relation FROM idem.versions('blkp.' || repeat('x', 59) || 'b')) AS two_tables,
       (SELECT octet_length(relname) FROM pg_class
         WHERE oid = (SELECT relation FROM idem.versions('blkp.' || repeat('x', 59) || 'a'))) AS name_bytes;
SELECT show_error(format('SELECT idem.publish(%L, %L)', 'blkp.' || repeat('x', 64), 'SELECT 3 AS n'));
RESET ROLE;
