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
