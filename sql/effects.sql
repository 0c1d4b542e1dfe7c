-- The outbox (issue 46): effects recorded in the caller's transaction,
-- taken by dispatchers with a lease and a fencing token, reported with the
-- token. Every state change, and every refusal.
-- Tokens from 1 here, whatever ran before: the messages name them.
-- idem.effects has no CHECK constraints (every writer checks its values;
-- PostgreSQL plans each CHECK again on every statement): here, one checks
-- every row every function writes against the invariants they keep.
ALTER TABLE idem.effects ADD CONSTRAINT ef_invariants CHECK (
  state IN ('pending', 'leased', 'done', 'dead')
  AND (state = 'leased') = (lease_until IS NOT NULL)
  AND (state = 'done') = (done_at IS NOT NULL)
  AND max_attempts >= 1 AND attempts >= 0
  AND octet_length(key) BETWEEN 1 AND 512 AND octet_length(kind) BETWEEN 1 AND 48);
SELECT setval('idem.effect_tokens', 1, false) IS NOT NULL AS tokens_from_1;
CREATE FUNCTION ef_state(k text) RETURNS text LANGUAGE sql AS $$
  SELECT state || ' attempts=' || attempts || CASE WHEN uncertain THEN ' uncertain' ELSE '' END
    FROM idem.effect_status(k) $$;

-- Recording: the first call records, the same effect again says so (false),
-- another effect under the key is ID001. A rolled-back record leaves
-- nothing.
SELECT idem.record_effect('charge:order-1', 'stripe.charge', '{"amount": 1200, "currency": "eur"}') AS recorded;
SELECT idem.record_effect('charge:order-1', 'stripe.charge', '{"currency": "eur", "amount": 1200}') AS recorded_again;
SELECT show_error($$SELECT idem.record_effect('charge:order-1', 'stripe.charge', '{"amount": 1300, "currency": "eur"}')$$);
SELECT show_error($$SELECT idem.record_effect('charge:order-1', 'email.receipt', '{"amount": 1200, "currency": "eur"}')$$);
BEGIN;
SELECT idem.record_effect('charge:order-2', 'stripe.charge', '{"amount": 5}');
ROLLBACK;
SELECT count(*) AS rolled_back_effects FROM idem.effects WHERE key = 'charge:order-2';
SELECT kind, state, payload, attempts, max_attempts, token, lease_until, uncertain
  FROM idem.effect_status('charge:order-1');
SELECT count(*) AS no_such_effect FROM idem.effect_status('charge:order-9');

-- A batch from a query: a key the batch repeats with the same payload is
-- one effect (its second row counted as there already); nothing is written
-- when everything is there.
CREATE TABLE ef_orders (id int, email text, due timestamptz);
INSERT INTO ef_orders VALUES (1, 'a@example.com', NULL), (2, 'b@example.com', '2999-01-01'), (3, 'c@example.com', NULL);
SELECT * FROM idem.record_effects($$SELECT 'receipt:' || id AS key, jsonb_build_object('to', email) AS payload,
                                      due AS not_before FROM ef_orders
                                    UNION ALL SELECT 'receipt:1', '{"to": "a@example.com"}', NULL$$,
                                  'email.receipt');
SELECT * FROM idem.record_effects($$SELECT 'receipt:' || id AS key, jsonb_build_object('to', email) AS payload
                                      FROM ef_orders WHERE id <= $1$$,
                                  'email.receipt', params => idem.params(3));
SELECT key, state, not_before > now() + interval '100 years' AS far_off FROM idem.effects
 WHERE kind = 'email.receipt' ORDER BY key;
SELECT show_error($$SELECT * FROM idem.record_effects('SELECT ''r:1'' AS key, ''{}''::jsonb AS payload UNION ALL SELECT ''r:1'', ''{"x": 1}''', 'email.receipt')$$);
SELECT show_error($$SELECT * FROM idem.record_effects('SELECT ''receipt:1'' AS key, ''{}''::jsonb AS payload', 'email.receipt')$$);
SELECT show_error($$SELECT * FROM idem.record_effects('SELECT 1 AS id', 'email.receipt')$$);
SELECT show_error($$SELECT * FROM idem.record_effects('SELECT NULL::text AS key, ''{}''::jsonb AS payload', 'email.receipt')$$);
SELECT show_error($$SELECT * FROM idem.record_effects('SELECT ''k'' AS key, ''{}''::jsonb AS payload WHERE $1', 'email.receipt')$$);
-- The batch is gathered as the relation idem_batch, which record_effects'
-- own statements read by that name: a table of that name (here a temporary
-- one, which the pinned search_path would find) is read by the caller's
-- query, never by the check, which would otherwise find ledger:9 recorded
-- and skip ledger:10. A payload written with another scale (1.0, 1.00) is
-- the same effect; another value is not.
CREATE TEMP TABLE idem_batch (k text, p jsonb, nb timestamptz);
INSERT INTO idem_batch VALUES ('ledger:9', '{"eur": 1.0}', NULL);
SELECT * FROM idem.record_effects('SELECT k AS key, p AS payload FROM idem_batch', 'ledger');
UPDATE idem_batch SET p = '{"eur": 1.00}';
SELECT * FROM idem.record_effects('SELECT k AS key, p AS payload FROM idem_batch', 'ledger');
SELECT * FROM idem.record_effects($$SELECT 'ledger:10' AS key, '{}'::jsonb AS payload$$, 'ledger');
SELECT show_error($$SELECT * FROM idem.record_effects('SELECT k AS key, ''{"eur": 2}''::jsonb AS payload FROM idem_batch', 'ledger')$$);
SELECT key, payload FROM idem.effects WHERE kind = 'ledger' ORDER BY key;
DROP TABLE idem_batch;
-- An outbox of more than four times the batch's rows (by ANALYZE's count):
-- the check probes the primary key per row instead of hashing the outbox
-- (no hash or merge joins for its statements); the same answers.
ANALYZE idem.effects;
SELECT reltuples > 4 AS outbox_outgrows_one_row FROM pg_class WHERE oid = 'idem.effects'::regclass;
SELECT * FROM idem.record_effects($$SELECT 'ledger:10' AS key, '{}'::jsonb AS payload$$, 'ledger');
SELECT show_error($$SELECT * FROM idem.record_effects('SELECT ''ledger:10'' AS key, ''{"x": 1}''::jsonb AS payload', 'ledger')$$);
SELECT * FROM idem.record_effects($$SELECT 'ledger:11' AS key, '{}'::jsonb AS payload$$, 'ledger');
-- idem._jsonb_same: the bytes first, then jsonb's equality (another scale,
-- a compressed value read from a table).
CREATE TABLE ef_big AS SELECT jsonb_agg(g) AS j FROM generate_series(1, 50000) g;
SELECT idem._jsonb_same('{"a": 1.0}', '{"a": 1.00}') AS scale, idem._jsonb_same('{"a": 1}', '{"a": 2}') AS other,
       idem._jsonb_same('[1, 2]', '[1, 2]') AS same, idem._jsonb_same(NULL, '{}') IS NULL AS strict,
       idem._jsonb_same(j, j) AS big_same, idem._jsonb_same(j, j || '0') AS big_other,
       pg_column_compression(j) IS NOT NULL AS compressed
  FROM ef_big;
DROP TABLE ef_big;

-- Taking: the due effects of a kind, oldest first, each with a lease and a
-- new token; the effect due in 2999 is not taken.
SELECT key, payload, attempt, uncertain, token > 0 AS has_token, lease_until > clock_timestamp() AS leased
  FROM idem.take_effects('email.receipt', n => 10, dispatcher => 'worker-1') ORDER BY key;
SELECT count(*) AS nothing_left FROM idem.take_effects('email.receipt', n => 10);
-- Done with the receiver's answer; the same report again, or one with a
-- token that never was the effect's, changes nothing (ID004).
SELECT token AS t1 FROM idem.effect_status('receipt:1') \gset
SELECT idem.effect_done('receipt:1', :t1, '{"message_id": "m-1"}');
SELECT state, answer, done_at IS NOT NULL AS done_at_set, lease_until FROM idem.effect_status('receipt:1');
SELECT show_error(format('SELECT idem.effect_done(%L, %s)', 'receipt:1', :t1));
SELECT show_error(format('SELECT idem.effect_done(%L, %s)', 'receipt:3', :t1));
SELECT show_error(format('SELECT idem.effect_done(%L, %s)', 'receipt:404', :t1));

-- Done in a batch (idem.effects_done): one statement, all or none. A
-- token that no longer owns its effect refuses the whole report (ID004,
-- naming it); nothing of the batch is done.
SELECT idem.record_effect('batch:' || g, 'sms', jsonb_build_object('n', g)) FROM generate_series(1, 3) g;
SELECT array_agg(key ORDER BY key) AS bkeys, array_agg(token ORDER BY key) AS btokens
  FROM idem.take_effects('sms', n => 3) \gset
SELECT show_error(format('SELECT idem.effects_done(%L, %L)', :'bkeys',
                         (:'btokens'::bigint[])[1:2] || 0::bigint));
SELECT key, state FROM idem.effects WHERE kind = 'sms' ORDER BY key;
SELECT idem.effects_done(:'bkeys', :'btokens', '{"\"a\"", null, "3"}') AS done;
SELECT key, state, answer FROM idem.effects WHERE kind = 'sms' ORDER BY key;
SELECT show_error(format('SELECT idem.effects_done(%L, %L)', :'bkeys', :'btokens'));
SELECT idem.effects_done('{}', '{}') AS nothing_to_report;
SELECT show_error($$SELECT idem.effects_done('{a,b}', '{1}')$$);
SELECT show_error($$SELECT idem.effects_done('{a}', '{1}', '{1,2}')$$);
SELECT show_error($$SELECT idem.effects_done('{a,NULL}', '{1,2}')$$);
SELECT show_error($$SELECT idem.effects_done('{a,a}', '{1,2}')$$);
SELECT show_error($$SELECT idem.effects_done(NULL, '{1}')$$);

-- Waking dispatchers: an idle dispatcher rings the doorbell of its scope
-- and kind (recorders NOTIFY only then: test/specs/effects_dispatchers.spec
-- shows both sides); it needs fresh snapshots.
SELECT rung, settle_after IS NOT NULL AS settle_after_given
  FROM idem.listen_effects('sms');
SELECT rung FROM idem.listen_effects('sms');
SELECT pg_listening_channels() AS listening;
SELECT count(*) AS doorbells_held FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
-- The doorbell is an advisory lock no SQL function can name (objsubid 3:
-- pg_advisory_lock's are 1 and 2), held shared.
SELECT objsubid, mode FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
SELECT idem.unlisten_effects('sms');
SELECT count(*) AS listening FROM pg_listening_channels();
SELECT count(*) AS doorbells_held FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
SELECT idem.unlisten_effects('sms');
BEGIN;
SELECT show_error($$SELECT * FROM idem.listen_effects('sms')$$);
ROLLBACK;
SELECT count(*) AS doorbells_held FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
-- On its own it is fine at any isolation level (the look after it is a
-- statement of its own), also after a write in the same statement: the
-- xid it answers is never older than the statement's own.
SET default_transaction_isolation = 'repeatable read';
SELECT rung FROM idem.listen_effects('sms');
SELECT idem.unlisten_effects('sms');
RESET default_transaction_isolation;
SELECT r.rung, r.settle_after >= w.x AS settles_after_own_xid
  FROM (SELECT pg_current_xact_id() AS x OFFSET 0) w,
  LATERAL idem.listen_effects('sms' || left(w.x::text, 0)) r;
SELECT idem.unlisten_effects('sms');
SELECT count(*) AS doorbells_held FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
-- A subtransaction (a PL/pgSQL block with EXCEPTION) counts as a block:
-- rolled back, it would undo the LISTEN and keep the doorbell.
DO $$ BEGIN PERFORM idem.listen_effects('sms'); EXCEPTION WHEN division_by_zero THEN NULL; END $$;

-- Failed: retried after a backoff with jitter (2^(attempt - 1) s, times
-- 0.5 to 1), or after retry_after; not retried with retry => false.
SELECT token AS t3 FROM idem.effect_status('receipt:3') \gset
SELECT idem.effect_failed('receipt:3', :t3, 'HTTP 503') AS state_after_failure;
SELECT state, last_error, not_before - clock_timestamp() BETWEEN interval '0.3 s' AND interval '1 s' AS backoff_of_attempt_1
  FROM idem.effect_status('receipt:3');
SELECT show_error(format('SELECT idem.renew_effect(%L, %s)', 'receipt:3', :t3));
UPDATE idem.effects SET not_before = clock_timestamp() WHERE key = 'receipt:3';
SELECT token AS t3b, attempt FROM idem.take_effects('email.receipt') \gset
SELECT :t3b > :t3 AS token_grows, :attempt AS attempt;
SELECT idem.effect_failed('receipt:3', :t3b, 'HTTP 429', retry_after => '90 seconds') AS state;
SELECT not_before - clock_timestamp() BETWEEN interval '85 s' AND interval '90 s' AS retry_after_kept FROM idem.effect_status('receipt:3');
-- Uncertain: the call may have happened; the next attempt says so.
UPDATE idem.effects SET not_before = clock_timestamp() WHERE key = 'receipt:3';
SELECT token AS t3c FROM idem.take_effects('email.receipt') \gset
SELECT idem.effect_uncertain('receipt:3', :t3c, 'timeout after the request was sent') AS state;
UPDATE idem.effects SET not_before = clock_timestamp() WHERE key = 'receipt:3';
SELECT key, attempt, uncertain FROM idem.take_effects('email.receipt');
SELECT ef_state('receipt:3');

-- A lease that ran out before its outcome was reported: taken again with a
-- new token, marked uncertain; the old token's report is refused.
SELECT idem.record_effect('push:1', 'push', '{"title": "hi"}', max_attempts => 2) AS recorded;
SELECT token AS p1 FROM idem.take_effects('push', lease => '1 millisecond') \gset
SELECT pg_sleep(0.02);
SELECT attempt, uncertain FROM idem.take_effects('push', lease => '1 millisecond');
SELECT show_error(format('SELECT idem.effect_done(%L, %s)', 'push:1', :p1));
SELECT pg_sleep(0.02);
-- Its second lease ran out too, and it had two attempts: dead, not taken.
SELECT count(*) AS taken FROM idem.take_effects('push');
SELECT state, attempts, uncertain, last_error FROM idem.effect_status('push:1');
-- Retried by hand: deliverable again, attempts from zero.
SELECT idem.retry_effect('push:1') AS retried, idem.retry_effect('push:1') AS again;
SELECT ef_state('push:1');
-- retry => false: dead at once.
SELECT token AS p2 FROM idem.take_effects('push') \gset
SELECT idem.renew_effect('push:1', :p2, '1 hour') > clock_timestamp() + interval '59 minutes' AS renewed;
SELECT idem.effect_failed('push:1', :p2, '400 Bad Request: no such device', retry => false) AS state;

-- Counts per kind and state (a pending effect not yet due: waiting).
SELECT kind, state, effects FROM idem.effect_counts() ORDER BY 1, 2;

-- Purge: delivered effects older than the interval go; after that their key
-- records a new effect.
UPDATE idem.effects SET done_at = clock_timestamp() - interval '40 days' WHERE key = 'receipt:1';
SELECT idem.purge_effects('30 days') AS purged, idem.purge_effects('30 days') AS purged_again;
SELECT idem.record_effect('receipt:1', 'email.receipt', '{"to": "a@example.com"}') AS a_new_effect;

-- Scopes: a role uses only the scopes it was granted (kind 'effects').
CREATE ROLE ef_etl;
GRANT USAGE ON SCHEMA idem TO ef_etl;
SELECT idem.grant_usage('ef_etl', 'billing', 'effects');
SET ROLE ef_etl;
SELECT idem.record_effect('charge:7', 'stripe.charge', '{}', scope => 'billing') AS in_its_scope;
SELECT show_error($$SELECT idem.record_effect('charge:7', 'stripe.charge', '{}')$$);
SELECT show_error($$SELECT * FROM idem.take_effects('stripe.charge')$$);
SELECT show_error($$SELECT * FROM idem.listen_effects('stripe.charge')$$);
SELECT show_error($$SELECT idem.effects_done('{charge:7}', '{1}')$$);
SELECT show_error($$SELECT count(*) FROM idem.effects$$);
RESET ROLE;
SELECT show_error($$SELECT idem.grant_usage('ef_etl', 'billing', 'outbox')$$);

-- Bad input: a clear error with a HINT, nothing recorded.
SELECT show_error($$SELECT idem.record_effect(NULL, 'k', '{}')$$);
SELECT show_error($$SELECT idem.record_effect('', 'k', '{}')$$);
SELECT show_error($$SELECT idem.record_effect(repeat('k', 513), 'k', '{}')$$);
SELECT show_error($$SELECT idem.record_effect('k', repeat('x', 49), '{}')$$);
SELECT show_error($$SELECT idem.record_effect('k', 'x', NULL)$$);
SELECT show_error($$SELECT idem.record_effect('k', 'x', '{}', max_attempts => 0)$$);
SELECT show_error($$SELECT * FROM idem.take_effects('x', n => 0)$$);
SELECT show_error($$SELECT * FROM idem.take_effects('x', lease => '-1 second')$$);
SELECT show_error($$SELECT idem.effect_done('k', NULL)$$);
SELECT show_error($$SELECT idem.effect_failed('k', 1, retry_after => '-1 s')$$);
SELECT show_error($$SELECT idem.purge_effects('-1 day')$$);
SELECT count(*) AS nothing_recorded FROM idem.effects WHERE key = 'k';

-- record_effect inserts its row without SPI where that is exactly what its
-- SQL does (pg_native/effect_row_insert.hpp); under SERIALIZABLE the SQL
-- runs (its predicate locks). Both write the same row and say the same.
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT idem.record_effect('path:sql', 'path', '{"n": 1}', not_before => '2999-01-01') AS recorded_by_sql,
       idem.record_effect('path:sql', 'path', '{"n": 1}', not_before => '2999-01-01') AS again_by_sql;
SELECT show_error($$SELECT idem.record_effect('path:sql', 'path', '{"n": 2}')$$);
COMMIT;
SELECT idem.record_effect('path:direct', 'path', '{"n": 1}', not_before => '2999-01-01') AS recorded_directly,
       idem.record_effect('path:direct', 'path', '{"n": 1}', not_before => '2999-01-01') AS again_directly;
SELECT show_error($$SELECT idem.record_effect('path:direct', 'path', '{"n": 2}')$$);
SELECT count(DISTINCT (kind, payload, state, not_before, attempts, max_attempts, token, lease_until, dispatcher,
                       uncertain, last_error, answer, done_at, recorded_at = now(), lane)) AS one_row_shape,
       count(*) AS rows
  FROM idem.effects WHERE kind = 'path';
-- The lane both wrote is core::effect_lane('default', 'path') (pinned in
-- test/unit/test_effect_lane.cpp: stored, it must never change).
SELECT DISTINCT lane FROM idem.effects WHERE kind = 'path';
-- A constraint added to the table is checked as the SQL would check it.
ALTER TABLE idem.effects ADD CONSTRAINT effects_no_forbidden CHECK (key <> 'forbidden');
SELECT regexp_replace(show_error($$SELECT idem.record_effect('forbidden', 'path', '{}')$$),
  'Failing row contains .*', 'Failing row contains (...)') AS other_constraint;
ALTER TABLE idem.effects DROP CONSTRAINT effects_no_forbidden;
DELETE FROM idem.effects WHERE kind = 'path';

-- Rerun-safe by construction: a job that records its effects with its
-- rows, keyed by the order, records nothing new on its second run; one
-- keyed by the time records a new effect every run (ID002, naming it).
CREATE TABLE ef_shipped (order_id int PRIMARY KEY);
SELECT run, table_name, row_count FROM idem.assert_rerun_safe(
  $$INSERT INTO ef_shipped VALUES (42) ON CONFLICT DO NOTHING;
    SELECT idem.record_effect('ship-mail:42', 'email', '{"order": 42}')$$, '{ef_shipped}');
SELECT regexp_replace(show_error($$SELECT * FROM idem.assert_rerun_safe(
  'INSERT INTO ef_shipped VALUES (42) ON CONFLICT DO NOTHING;
   SELECT idem.record_effect(''digest:'' || clock_timestamp(), ''email'', ''{}'')', '{ef_shipped}')$$),
  'digest:[^"]*', 'digest:<time>') AS keyed_by_time;
SELECT count(*) AS rolled_back FROM idem.effects WHERE kind = 'email';

SELECT idem.revoke_usage('ef_etl', 'billing', 'effects');
REVOKE USAGE ON SCHEMA idem FROM ef_etl;
DROP ROLE ef_etl;
DELETE FROM idem.effects;
DROP TABLE ef_orders, ef_shipped;
DROP FUNCTION ef_state(text);
ALTER TABLE idem.effects DROP CONSTRAINT ef_invariants;

-- A CHECK someone adds to idem.effects is evaluated with search_path
-- pinned, whatever the caller set: the unqualified length() in its
-- function is pg_catalog's, never the caller's (which would run as the
-- extension owner). Without one, the released table, recording needs no
-- pinning.
CREATE FUNCTION public.ef_short_key(k text) RETURNS boolean LANGUAGE sql AS $$ SELECT length(k) < 100 $$;
ALTER TABLE idem.effects ADD CONSTRAINT ef_short CHECK (public.ef_short_key(key));
CREATE SCHEMA ef_evil;
CREATE FUNCTION ef_evil.length(text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'ef_evil.length ran as %', current_user; END $$;
SET search_path = ef_evil, pg_catalog;
SELECT idem.record_effect('pinned:1', 'mail') AS recorded_with_check;
SELECT (regexp_split_to_array(public.show_error($$SELECT idem.record_effect(repeat('k', 120), 'mail')$$), ' \| '))[1:2]
  AS refused_by_check;
RESET search_path;
ALTER TABLE idem.effects DROP CONSTRAINT ef_short;
SET search_path = ef_evil, pg_catalog;
SELECT idem.record_effect('pinned:2', 'mail') AS recorded_without_check;
RESET search_path;
SELECT key FROM idem.effects ORDER BY key;
DELETE FROM idem.effects;
DROP SCHEMA ef_evil CASCADE;
DROP FUNCTION public.ef_short_key(text);
