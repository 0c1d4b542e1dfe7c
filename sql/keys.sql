-- Idempotency keys (api.md section 3): claim, complete, once and friends.
-- The webhook that fires twice, in one session; the concurrent version is
-- test/specs/keys_webhook.spec.
CREATE TABLE fulfilments (event_id text PRIMARY KEY, order_id int, fulfilled_at timestamptz DEFAULT now());

-- The pattern: the side effect and the claim in one statement.
INSERT INTO fulfilments (event_id, order_id) SELECT 'evt_1', 42 WHERE idem.claim('evt_1', 'webhooks');
INSERT INTO fulfilments (event_id, order_id) SELECT 'evt_1', 42 WHERE idem.claim('evt_1', 'webhooks');
SELECT count(*) AS fulfilled_once FROM fulfilments;

-- A claim rolled back leaves nothing: the next delivery owns the key.
BEGIN;
SELECT idem.claim('evt_2', 'webhooks') AS first_try;
ROLLBACK;
SELECT idem.claim('evt_2', 'webhooks') AS after_rollback;
SELECT idem.claim('evt_2', 'webhooks') AS replay;
-- The same transaction asking twice still owns the key.
BEGIN;
SELECT idem.claim('evt_3', 'webhooks') AS first, idem.claim('evt_3', 'webhooks') AS again;
COMMIT;
-- Scopes are separate namespaces.
SELECT idem.claim('evt_3', 'other_scope') AS other_scope;

-- Fingerprints: a key reused for a different request is an error of its own
-- (ID001), never a silent second run; the same request is a plain replay.
SELECT idem.claim('pay_1', 'payments', fingerprint => 'sha256:aaa');
SELECT idem.claim('pay_1', 'payments', fingerprint => 'sha256:aaa') AS same_request;
SELECT show_error($$SELECT idem.claim('pay_1', 'payments', fingerprint => 'sha256:bbb')$$);

-- once: run the query once per key and keep its rows; a repeat returns
-- them without running anything.
CREATE TABLE charges (id serial PRIMARY KEY, amount numeric);
SELECT idem.once('charge_1', $$INSERT INTO charges (amount) VALUES (9.99) RETURNING id, amount$$, 'payments');
SELECT idem.once('charge_1', $$INSERT INTO charges (amount) VALUES (9.99) RETURNING id, amount$$, 'payments');
SELECT count(*) AS charged_once FROM charges;
SELECT idem.once('noop', 'SELECT 1 WHERE false', 'payments') AS empty_array;
SELECT idem.once('plain', 'UPDATE charges SET amount = amount', 'payments') AS statement_without_rows;
-- A query whose own WITH writes (0.8.0: "WITH clause containing a
-- data-modifying statement must be at the top level", found by the fault
-- suite): run once, its rows stored with their types.
SELECT idem.once('cte_1', $$WITH c AS (INSERT INTO charges (amount) VALUES (5.00) RETURNING id, amount)
  SELECT amount, amount > 1 AS large, NULL::text AS note FROM c$$, 'payments') AS cte_result;
SELECT idem.once('cte_1', $$WITH c AS (INSERT INTO charges (amount) VALUES (5.00) RETURNING id, amount)
  SELECT amount, amount > 1 AS large, NULL::text AS note FROM c$$, 'payments') AS cte_replayed;
SELECT count(*) AS one_charge_of_5 FROM charges WHERE amount = 5.00;
SELECT idem.result('charge_1', 'payments') AS stored_result;
SELECT idem.result('never', 'payments') IS NULL AS unknown_key_has_no_result;
-- once with a fingerprint guards the request too.
SELECT show_error($$SELECT idem.once('charge_1', 'SELECT 1', 'payments', fingerprint => 'other')$$);
-- A failing query claims nothing.
SELECT show_error($$SELECT idem.once('charge_2', 'SELECT 1/0', 'payments')$$);
SELECT count(*) AS no_key_left FROM idem.key_status('charge_2', 'payments');

-- Leases: work that spans transactions.
SELECT idem.claim('export_1', 'exports', lease => '1 hour') AS leased;
SELECT state, lease_until > now() AS lease_live FROM idem.key_status('export_1', 'exports');
-- Another worker's claim fails at once with 55P03 while the lease lives,
-- whatever wait says.
SELECT show_error($$SELECT idem.claim('export_1', 'exports', lease => '1 hour')$$);
SELECT show_error($$SELECT idem.claim('export_1', 'exports', wait => false)$$);
SELECT idem.save_point('export_1', 'rows 1-1000 sent', 'exports');
SELECT state, recovery_point FROM idem.key_status('export_1', 'exports');
-- After the lease expires (clock_timestamp), a claim takes the key over and
-- sees the last recovery point.
SELECT idem.claim('export_2', 'exports', lease => '10 milliseconds');
SELECT idem.save_point('export_2', 'page 7', 'exports');
SELECT pg_sleep(0.1);
SELECT state FROM idem.key_status('export_2', 'exports');
SELECT idem.claim('export_2', 'exports', lease => '1 hour') AS taken_over;
SELECT state, recovery_point FROM idem.key_status('export_2', 'exports');
SELECT idem.complete('export_2', '{"rows": 2000}', 'exports');
SELECT state, result, lease_until IS NULL AS lease_cleared FROM idem.key_status('export_2', 'exports');
SELECT idem.claim('export_2', 'exports') AS after_done;
-- complete and save_point need a claim; a done key keeps its result.
SELECT show_error($$SELECT idem.complete('never_claimed', NULL, 'exports')$$);
SELECT show_error($$SELECT idem.complete('export_2', '{"rows": 1}', 'exports')$$);
SELECT show_error($$SELECT idem.save_point('export_2', 'x', 'exports')$$);
SELECT result FROM idem.key_status('export_2', 'exports');

-- claim_many: the keys this transaction now owns, in one statement.
SELECT idem.claim('batch_3', 'batch');
SELECT idem.claim('batch_4', 'batch', lease => '1 hour');
SELECT k FROM idem.claim_many(ARRAY['batch_1', 'batch_2', 'batch_3', 'batch_4', 'batch_2'], 'batch') AS k ORDER BY 1;
SELECT k FROM idem.claim_many(ARRAY['batch_1', 'batch_2'], 'batch') AS k;
SELECT count(*) AS ten_thousand FROM idem.claim_many(ARRAY(SELECT 'bulk_' || g FROM generate_series(1, 10000) g), 'batch');
SELECT count(*) AS none_again FROM idem.claim_many(ARRAY(SELECT 'bulk_' || g FROM generate_series(1, 10000) g), 'batch');
SELECT count(*) AS nothing FROM idem.claim_many('{}', 'batch');

-- Keys beyond the btree size limit work (up to the 8 kB limit, checked in
-- security_hardening.sql): a key of more than 512 bytes is
-- stored as U+0001 || md5(key) in key (the primary key) and as itself in
-- long_key; so is a short key that starts with U+0001, so that it can never
-- equal a digest. Every other key is its own primary key value.
SELECT idem.claim(repeat('k', 8192), 'long') AS long_key, idem.claim(repeat('k', 8192), 'long') AS long_key_again;
SELECT idem.claim(repeat('k', 8191) || 'j', 'long') AS different_long_key;
SELECT show_error(format($$SELECT idem.claim(%L, 'long', fingerprint => 'x')$$, repeat('k', 8192)));
SELECT idem.claim(repeat('é', 256), 'long') AS key_of_512_bytes, idem.claim(repeat('é', 256) || 'x', 'long') AS key_of_513_bytes,
       idem.claim(chr(1) || 'starts with U+0001', 'long') AS marker_key, idem.claim(chr(1) || 'starts with U+0001', 'long') AS marker_key_again;
SELECT octet_length(COALESCE(long_key, key)) AS key_bytes, long_key IS NULL AS inline,
       CASE WHEN long_key IS NULL THEN key = COALESCE(long_key, key)
            ELSE key = chr(1) || md5(long_key) END AS stored_as_documented
  FROM idem.keys WHERE scope = 'long' ORDER BY 1, 3;
SELECT state, (SELECT count(*) FROM idem.claim_many(ARRAY[repeat('é', 256) || 'x', repeat('m', 600)], 'long')) AS batch_new
  FROM idem.key_status(repeat('é', 256) || 'x', 'long');

-- NULL and empty arguments.
SELECT show_error($$SELECT idem.claim(NULL)$$);
SELECT show_error($$SELECT idem.claim('')$$);
SELECT show_error($$SELECT idem.claim('x', NULL)$$);
SELECT show_error($$SELECT idem.claim('x', '')$$);
SELECT show_error($$SELECT idem.claim('x', wait => NULL)$$);
SELECT show_error($$SELECT idem.claim('x', lease => '-1 hour')$$);
SELECT show_error($$SELECT idem.claim_many(ARRAY['a', NULL])$$);
SELECT show_error($$SELECT idem.claim_many(ARRAY['a', ''])$$);
SELECT show_error($$SELECT idem.once('x', NULL)$$);
SELECT show_error($$SELECT idem.save_point('x', NULL)$$);
SELECT show_error($$SELECT idem.purge_keys(NULL)$$);

-- forget and purge_keys.
SELECT idem.forget('evt_1', 'webhooks') AS forgotten, idem.forget('evt_1', 'webhooks') AS already_gone;
SELECT idem.claim('evt_1', 'webhooks') AS claimable_again;
UPDATE idem.keys SET claimed_at = claimed_at - interval '40 days', completed_at = completed_at - interval '40 days'
 WHERE scope = 'webhooks';
SELECT idem.purge_keys('30 days', 'webhooks') AS purged;
SELECT idem.purge_keys('30 days', 'webhooks') AS purged_again;
SELECT count(*) AS export_lease_survives FROM idem.key_status('export_1', 'exports');
-- purge_keys uses the age index. Whether as a bitmap scan or a plain index
-- scan depends on whether autovacuum has analyzed idem.keys yet (after the
-- 10,000 claims above), so only the plain one is allowed.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) DELETE FROM idem.keys k WHERE COALESCE(k.completed_at, k.claimed_at) < now() - interval '30 days';
RESET enable_seqscan;
RESET enable_bitmapscan;

-- Privileges: the state table is closed; a role needs the one grant, per
-- scope or for every scope, given directly or through a group role.
CREATE ROLE k_etl;
CREATE ROLE k_other;
CREATE ROLE idem_user;
GRANT SELECT, INSERT ON fulfilments TO k_etl, k_other;
SET ROLE k_etl;
SELECT show_error($$SELECT idem.claim('evt_9', 'webhooks')$$);
SELECT show_error($$SELECT * FROM idem.keys$$);
SELECT show_error($$INSERT INTO idem.keys (scope, key, state, claimed_at, claimed_by) VALUES ('webhooks', 'evt_9', 'done', now(), pg_current_xact_id())$$);
RESET ROLE;
-- Way one: grant the role itself, for one scope.
SELECT idem.grant_usage('k_etl', 'webhooks');
SET ROLE k_etl;
INSERT INTO fulfilments (event_id, order_id) SELECT 'evt_9', 9 WHERE idem.claim('evt_9', 'webhooks');
SELECT idem.claim('evt_9', 'webhooks') AS replay_as_etl;
SELECT show_error($$SELECT idem.result('charge_1', 'payments')$$);
RESET ROLE;
-- Way two: the docs' one-time role setup, then GRANT idem_user TO a role.
SELECT idem.grant_usage('idem_user');
GRANT idem_user TO k_other;
SET ROLE k_other;
SELECT idem.result('charge_1', 'payments') IS NOT NULL AS group_grant_works;
RESET ROLE;
REVOKE idem_user FROM k_other;
SET ROLE k_other;
SELECT show_error($$SELECT idem.result('charge_1', 'payments')$$);
RESET ROLE;
SELECT idem.revoke_usage('k_etl', 'webhooks');
SET ROLE k_etl;
SELECT show_error($$SELECT idem.claim('evt_10', 'webhooks')$$);
RESET ROLE;
SELECT show_error($$SELECT idem.grant_usage(NULL)$$);
SET ROLE k_etl;
SELECT show_error($$SELECT idem.grant_usage('k_etl')$$);
SELECT show_error($$SELECT idem.purge_keys('1 day')$$);
RESET ROLE;
SELECT idem.revoke_usage('idem_user');
REVOKE ALL ON fulfilments FROM k_etl, k_other;
DROP ROLE k_etl;
DROP ROLE k_other;
DROP ROLE idem_user;

-- Two-phase commit: a claim prepared and then committed holds; the state
-- table is a plain table, nothing temporary.
BEGIN;
SELECT idem.claim('evt_2pc', 'webhooks') AS claimed_in_2pc;
PREPARE TRANSACTION 'idem_2pc';
COMMIT PREPARED 'idem_2pc';
SELECT idem.claim('evt_2pc', 'webhooks') AS after_commit_prepared;
BEGIN;
SELECT idem.claim('evt_2pc_rb', 'webhooks') AS claimed_in_2pc;
PREPARE TRANSACTION 'idem_2pc_rb';
ROLLBACK PREPARED 'idem_2pc_rb';
SELECT idem.claim('evt_2pc_rb', 'webhooks') AS after_rollback_prepared;

-- once() twice for one key in one transaction runs the query once.
CREATE TABLE once_effects (n int);
BEGIN;
SELECT idem.once('twice_in_txn', 'INSERT INTO once_effects VALUES (1) RETURNING n');
SELECT idem.once('twice_in_txn', 'INSERT INTO once_effects VALUES (1) RETURNING n');
COMMIT;
SELECT count(*) AS ran_once FROM once_effects;
SELECT show_error($$SELECT idem.purge_keys('-1 day', 'default')$$);

-- Caller SQL that would end the transaction or copy to the client is the
-- caller's mistake (0A000), not an internal error; nothing is claimed.
SELECT show_error($$SELECT idem.once('bad_sql', 'COMMIT')$$);
SELECT show_error($$SELECT idem.once('bad_sql', 'COPY once_effects TO STDOUT')$$);
SELECT count(*) AS bad_sql_claimed FROM idem.key_status('bad_sql');
-- A long key is cut on a character boundary in messages (77 bytes would end
-- inside the 39th 'é'), so the message stays valid UTF-8.
SELECT show_error($$SELECT idem.complete(repeat('é', 100))$$);

-- claim writes its row without SPI where it can (src/pg_native/key_row_insert.hpp): the
-- row is the one the SQL path writes, the key itself its primary key value
-- (multi-byte keys too), and the SQL functions find it.
BEGIN;
SELECT idem.claim('Käse ☕ 鍵', 'direct') AS claimed;
SELECT key = 'Käse ☕ 鍵' AND long_key IS NULL AS stored_inline, state, fingerprint IS NULL AS no_fingerprint,
       lease IS NULL AND lease_until IS NULL AS no_lease, claimed_at = now() AS claimed_now,
       claimed_by = pg_current_xact_id() AS claimed_by_this_xact
  FROM idem.keys WHERE scope = 'direct';
COMMIT;
SELECT state FROM idem.key_status('Käse ☕ 鍵', 'direct');
SELECT idem.claim('leased', 'direct', fingerprint => 'f1', lease => '1 hour') AS leased;
SELECT state, fingerprint, lease, lease_until > clock_timestamp() AS lease_live
  FROM idem.keys WHERE scope = 'direct' AND key = 'leased';
-- A duplicate assigns no transaction id (it writes nothing, as a bare
-- INSERT ... ON CONFLICT DO NOTHING that conflicts).
BEGIN;
SELECT idem.claim('Käse ☕ 鍵', 'direct') AS duplicate;
SELECT pg_current_xact_id_if_assigned() IS NULL AS no_xid;
COMMIT;
-- REPEATABLE READ: a key committed before the snapshot is a plain
-- duplicate; one claimed in this transaction is still owned.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT idem.claim('Käse ☕ 鍵', 'direct') AS rr_duplicate;
SELECT idem.claim('rr_new', 'direct') AS rr_new, idem.claim('rr_new', 'direct') AS rr_again;
COMMIT;
-- Where the direct path does not apply, the SQL path gives the same answers:
-- SERIALIZABLE, and a trigger on idem.keys.
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT idem.claim('ser_new', 'direct') AS ser_new, idem.claim('ser_new', 'direct') AS ser_again,
       idem.claim('Käse ☕ 鍵', 'direct') AS ser_duplicate;
COMMIT;
BEGIN;
CREATE FUNCTION pg_temp.count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE NOTICE 'trigger saw %', NEW.key; RETURN NEW; END $$;
CREATE TRIGGER keys_audit BEFORE INSERT ON idem.keys FOR EACH ROW EXECUTE FUNCTION pg_temp.count_insert();
SELECT idem.claim('with_trigger', 'direct') AS with_trigger, idem.claim('with_trigger', 'direct') AS again,
       idem.claim('Käse ☕ 鍵', 'direct') AS duplicate;
ROLLBACK;
-- A read-only transaction: the INSERT's own error (25006), also for a key
-- that exists.
BEGIN READ ONLY;
SELECT show_error($$SELECT idem.claim('read_only', 'direct')$$);
SELECT show_error($$SELECT idem.claim('Käse ☕ 鍵', 'direct')$$);
ROLLBACK;
SELECT count(*) AS direct_keys FROM idem.keys WHERE scope = 'direct';

-- Two long keys with the same MD5 (planted here: the digest row of the long
-- key evt_a() that holds the long key evt_b(), as a collision would leave
-- it). The row is found by the digest, and it is not evt_a()'s: claiming
-- evt_a() fails with ID003 instead of taking evt_b()'s claim for its own, on
-- the direct path and on the SQL path, alone and in a batch; the functions
-- that act on a key's row leave evt_b()'s row alone.
CREATE FUNCTION evt_a() RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT 'evt_a ' || repeat('.', 600)$$;
INSERT INTO idem.keys (scope, key, long_key, state, claimed_at, claimed_by, result)
VALUES ('collide', chr(1) || md5(evt_a()), 'evt_b ' || repeat('.', 600), 'done', now(), pg_current_xact_id(), '{"of": "evt_b"}');
SELECT show_error($$SELECT idem.claim(evt_a(), 'collide')$$);
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT show_error($$SELECT idem.claim(evt_a(), 'collide')$$);
ROLLBACK;
SELECT show_error($$SELECT idem.claim(evt_a(), 'collide', lease => '1 hour')$$);
SELECT show_error($$SELECT * FROM idem.once(evt_a(), 'SELECT 1', 'collide')$$);
SELECT show_error($$SELECT * FROM idem.claim_many(ARRAY['evt_c', evt_a()], 'collide')$$);
SELECT count(*) AS evt_c_not_claimed FROM idem.keys WHERE scope = 'collide' AND key = 'evt_c';
SELECT show_error($$SELECT idem.complete(evt_a(), '{"of": "evt_a"}', 'collide')$$);
SELECT show_error($$SELECT idem.save_point(evt_a(), 'step 2', 'collide')$$);
SELECT idem.result(evt_a(), 'collide') IS NULL AS no_result_for_evt_a;
SELECT count(*) AS no_status_for_evt_a FROM idem.key_status(evt_a(), 'collide');
SELECT idem.forget(evt_a(), 'collide') AS forgot_evt_a;
-- evt_b's row is as it was.
SELECT left(long_key, 8) AS key, state, result FROM idem.keys WHERE scope = 'collide';
DROP FUNCTION evt_a();
DELETE FROM idem.keys WHERE scope = 'collide';

-- A CHECK someone adds to idem.keys that calls a function not built in is
-- evaluated with search_path pinned (the SQL path), whatever the caller
-- set: the unqualified length() in it is pg_catalog's, never the caller's
-- (which would run as the extension owner).
CREATE FUNCTION public.kp_short_key(k text) RETURNS boolean LANGUAGE sql AS $$ SELECT length(k) < 100 $$;
ALTER TABLE idem.keys ADD CONSTRAINT kp_short CHECK (public.kp_short_key(scope));
CREATE SCHEMA kp_evil;
CREATE FUNCTION kp_evil.length(text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'kp_evil.length ran as %', current_user; END $$;
SET search_path = kp_evil, pg_catalog;
SELECT idem.claim('pinned:1', 'pinned') AS claimed_with_check;
SELECT (regexp_split_to_array(public.show_error($$SELECT idem.claim('pinned:2', repeat('s', 120))$$), ' \| '))[1:2]
  AS refused_by_check;
RESET search_path;
SELECT key, state FROM idem.keys WHERE scope = 'pinned';
ALTER TABLE idem.keys DROP CONSTRAINT kp_short;
DELETE FROM idem.keys WHERE scope = 'pinned';
DROP SCHEMA kp_evil CASCADE;
DROP FUNCTION public.kp_short_key(text);

-- claim keeps its executor state for the transaction's next claim
-- (src/pg_native/target_cache.hpp), holding nothing between calls: no lock
-- on the indexes (the executor releases those after each statement) and no
-- reference that would make DDL of the same transaction fail as "in use".
BEGIN;
SELECT idem.claim('kc1', 'cache') AS kc1;
SELECT count(*) AS index_locks_held FROM pg_locks
 WHERE pid = pg_backend_pid() AND relation IN ('idem.keys_pkey'::regclass, 'idem.keys_age'::regclass);
-- An index made after the first claim is maintained by the next one.
CREATE INDEX keys_cache_probe ON idem.keys ((key || '!'));
SELECT idem.claim('kc2', 'cache') AS kc2;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT key FROM idem.keys WHERE key || '!' = 'kc2!';
SELECT key FROM idem.keys WHERE key || '!' = 'kc2!';
-- A column added: the SQL path claims (the direct one knows the released
-- columns only); dropped again: the direct path, and the row is whole.
ALTER TABLE idem.keys ADD COLUMN kc_note text;
SELECT idem.claim('kc3', 'cache') AS kc3;
ALTER TABLE idem.keys DROP COLUMN kc_note;
SELECT idem.claim('kc4', 'cache') AS kc4, idem.claim('kc4', 'cache') AS kc4_again;
-- TRUNCATE in the same transaction (a new file for the table and its
-- indexes), then claims into the empty table.
TRUNCATE idem.keys;
SELECT idem.claim('kc1', 'cache') AS kc1_after_truncate, idem.claim('kc5', 'cache') AS kc5;
SELECT key, state, claimed_by = pg_current_xact_id() AS mine FROM idem.keys ORDER BY key;
ROLLBACK;
SELECT count(*) AS cache_keys_after_rollback FROM idem.keys WHERE scope = 'cache';
-- A claim that fails inside a savepoint (here a CHECK refuses its row,
-- after the conflict check): the claims after it, in the same transaction,
-- build their state again and write whole rows; a savepoint rolled back
-- takes its claim with it.
BEGIN;
ALTER TABLE idem.keys ADD CONSTRAINT kc_no_bad CHECK (key NOT LIKE 'bad%');
DO $$
BEGIN
    FOR i IN 1..3 LOOP
        PERFORM idem.claim('ok' || i, 'cache');
        BEGIN
            PERFORM idem.claim('bad' || i, 'cache');
        EXCEPTION WHEN check_violation THEN
            RAISE NOTICE 'bad% refused: %', i, SQLERRM;
        END;
    END LOOP;
END $$;
SAVEPOINT s;
SELECT idem.claim('rolled_back', 'cache') AS in_savepoint;
ROLLBACK TO SAVEPOINT s;
SELECT idem.claim('rolled_back', 'cache') AS after_rollback_to, idem.claim('ok1', 'cache') AS ok1_again;
SELECT key, state, claimed_at = now() AS claimed_now, claimed_by = pg_current_xact_id() AS mine
  FROM idem.keys WHERE scope = 'cache' ORDER BY key;
ROLLBACK;
-- Many claims in one transaction: every row written, the primary key and
-- the age index each holding all of them.
BEGIN;
DO $$ BEGIN FOR i IN 1..2000 LOOP PERFORM idem.claim('many' || i, 'cache'); END LOOP; END $$;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM idem.keys WHERE scope = 'cache' AND key LIKE 'many%';
SELECT count(*) AS by_primary_key FROM idem.keys WHERE scope = 'cache' AND key LIKE 'many%';
EXPLAIN (COSTS OFF) SELECT count(*) FROM idem.keys WHERE COALESCE(completed_at, claimed_at) >= now();
SELECT count(*) AS by_age_index FROM idem.keys WHERE COALESCE(completed_at, claimed_at) >= now();
ROLLBACK;
