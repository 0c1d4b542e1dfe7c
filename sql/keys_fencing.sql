-- Fencing tokens (docs/keys.md, Fencing): a leased claim hands out a token
-- that grows with every claim and takeover; save_point, complete and
-- check_lease given a token refuse (ID004) once another worker owns the key.
-- The concurrent story is test/specs/keys_fencing.spec; crashes, failover and
-- dump/restore are test/t/080_fencing.pl, 040_failover.pl, 060_dump_restore.pl.
-- Tokens come from one sequence; it starts at a known value here so that the
-- messages below are the same on every run.
SELECT setval('idem.key_tokens', 1000) AS tokens_from;
CREATE TABLE exported (page int, worker text);

-- Worker A leases the export and records its progress with its token.
SELECT idem.claim_lease('export_9', 'exports', '20 milliseconds') AS a_token;
SELECT idem.save_point('export_9', 'page 1', 'exports', token => 1001);
SELECT state, recovery_point, token FROM idem.key_status('export_9', 'exports');
-- A stalls past its lease; B takes the key over with a new token and
-- resumes from A's recovery point.
SELECT pg_sleep(0.05);
SELECT idem.claim_lease('export_9', 'exports', '1 hour') AS b_token;
SELECT state, recovery_point, token FROM idem.key_status('export_9', 'exports');
-- A wakes and writes page 2 with its save_point in one transaction: the
-- save_point fails, and A's page goes with it.
BEGIN;
INSERT INTO exported VALUES (2, 'a');
SELECT idem.save_point('export_9', 'page 2', 'exports', token => 1001);
ROLLBACK;
SELECT count(*) AS pages_of_a FROM exported WHERE worker = 'a';
-- So do complete and check_lease with A's token.
SELECT show_error($$SELECT idem.complete('export_9', '{"by": "a"}', 'exports', 1001)$$);
SELECT show_error($$SELECT idem.check_lease('export_9', 'exports', 1001)$$);
-- B's token owns the key: check_lease passes, B writes and completes.
BEGIN;
SELECT idem.check_lease('export_9', 'exports', 1002);
INSERT INTO exported VALUES (2, 'b');
SELECT idem.save_point('export_9', 'page 2', 'exports', 1002);
COMMIT;
SELECT idem.complete('export_9', '{"pages": 2}', 'exports', 1002);
SELECT state, result, recovery_point, token FROM idem.key_status('export_9', 'exports');
-- A done key: its own token is refused too, and a new leased claim gets NULL.
SELECT show_error($$SELECT idem.save_point('export_9', 'page 3', 'exports', 1002)$$);
SELECT show_error($$SELECT idem.complete('export_9', NULL, 'exports', 1002)$$);
SELECT idem.claim_lease('export_9', 'exports', '1 hour') IS NULL AS done_key_gives_null;
-- Forgotten: the token is lost, and the next claim draws a new one.
SELECT idem.forget('export_9', 'exports');
SELECT show_error($$SELECT idem.check_lease('export_9', 'exports', 1002)$$);
SELECT idem.claim_lease('export_9', 'exports', '1 hour') AS after_forget;

-- Without a token, save_point and complete behave as before fencing.
SELECT idem.claim('export_10', 'exports', lease => '1 hour') AS leased_without_token;
SELECT idem.save_point('export_10', 'page 1', 'exports');
SELECT token AS export_10_token FROM idem.key_status('export_10', 'exports');
SELECT idem.complete('export_10', '{"ok": true}', 'exports');
SELECT state, result FROM idem.key_status('export_10', 'exports');

-- A live lease of another worker: 55P03 at once, as for claim.
SELECT idem.claim_lease('export_11', 'exports', '1 hour') AS c_token;
SELECT show_error($$SELECT idem.claim_lease('export_11', 'exports', '1 hour')$$);
-- Twice in one transaction: the same token. After a plain claim in the same
-- transaction there is no token to give: 55000.
BEGIN;
SELECT idem.claim_lease('export_12', 'exports', '1 hour') AS first,
       idem.claim_lease('export_12', 'exports', '1 hour') AS again;
ROLLBACK;
BEGIN;
SELECT idem.claim('export_13', 'exports') AS plain;
SELECT show_error($$SELECT idem.claim_lease('export_13', 'exports', '1 hour')$$);
ROLLBACK;
-- A key claimed without a lease has no token.
SELECT idem.claim('export_14', 'exports') AS plain_claim;
SELECT state, token IS NULL AS no_token FROM idem.key_status('export_14', 'exports');
-- Fingerprints are checked as by claim (ID001).
SELECT idem.claim_lease('export_15', 'exports', '1 hour', fingerprint => 'sha256:aaa') AS fp_token;
SELECT show_error($$SELECT idem.claim_lease('export_15', 'exports', '1 hour', fingerprint => 'sha256:bbb')$$);

-- claim_many takes an expired lease over, and draws a token: the old one
-- is lost.
SELECT idem.claim_lease('export_16', 'exports', '20 milliseconds') AS d_token;
SELECT pg_sleep(0.05);
SELECT k FROM idem.claim_many(ARRAY['export_16'], 'exports') AS k;
SELECT state, token FROM idem.key_status('export_16', 'exports');
SELECT show_error($$SELECT idem.check_lease('export_16', 'exports', 1008)$$);

-- Under SERIALIZABLE claim runs its SQL statements: the same tokens.
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT idem.claim_lease('export_17', 'exports', '1 hour') AS serializable_token;
SELECT idem.check_lease('export_17', 'exports', 1010);
COMMIT;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT idem.save_point('export_17', 'page 1', 'exports', 1010);
SELECT show_error($$SELECT idem.save_point('export_17', 'page 2', 'exports', 1)$$);
ROLLBACK;

-- Bad input: NULLs (22004), an empty key, a lease that is not positive (22023).
SELECT show_error($$SELECT idem.claim_lease(NULL, 'exports', '1 hour')$$);
SELECT show_error($$SELECT idem.claim_lease('k', NULL, '1 hour')$$);
SELECT show_error($$SELECT idem.claim_lease('k', 'exports', NULL)$$);
SELECT show_error($$SELECT idem.claim_lease('k', 'exports', '1 hour', wait => NULL)$$);
SELECT show_error($$SELECT idem.claim_lease('', 'exports', '1 hour')$$);
SELECT show_error($$SELECT idem.claim_lease('k', 'exports', '-1 minute')$$);
SELECT show_error($$SELECT idem.check_lease('k', 'exports', NULL)$$);
SELECT show_error($$SELECT idem.check_lease(NULL, 'exports', 1)$$);
SELECT show_error($$SELECT idem.check_lease('never_claimed', 'exports', 1)$$);

-- Privileges: the scope grant, as for every key function; the sequence is
-- closed to PUBLIC (no role can reset the tokens).
CREATE ROLE fence_etl;
CREATE ROLE fence_other;
SELECT idem.grant_usage('fence_etl', 'exports', 'keys');
SET ROLE fence_etl;
SELECT idem.claim_lease('export_18', 'exports', '1 hour') AS granted_token;
SELECT idem.check_lease('export_18', 'exports', 1011);
SELECT show_error($$SELECT setval('idem.key_tokens', 1)$$);
SELECT show_error($$SELECT nextval('idem.key_tokens')$$);
RESET ROLE;
SET ROLE fence_other;
SELECT show_error($$SELECT idem.claim_lease('export_19', 'exports', '1 hour')$$);
SELECT show_error($$SELECT idem.check_lease('export_18', 'exports', 1011)$$);
RESET ROLE;
SELECT idem.revoke_usage('fence_etl', 'exports', 'keys');
DROP ROLE fence_etl;
DROP ROLE fence_other;
DROP TABLE exported;
DELETE FROM idem.keys WHERE scope = 'exports';
