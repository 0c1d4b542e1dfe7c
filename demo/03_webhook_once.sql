-- Part 3: row at a time. A payment provider delivers the same webhook twice
-- (the first delivery was slow to acknowledge). The fulfilment and the claim
-- of the provider's event id happen in one statement, in one transaction.
\pset footer off
\set ECHO none
CREATE TABLE fulfilments (event_id text, order_id int, fulfilled_at timestamptz DEFAULT now());

\echo '== Part 3: a webhook delivered twice fulfils the order once'
\echo
\echo '-- delivery 1 of event evt_1001 (order 7)'
INSERT INTO fulfilments (event_id, order_id)
SELECT 'evt_1001', 7 WHERE idem.claim('evt_1001', 'payments', fingerprint => 'order=7;amount=42.00');
\echo '-- delivery 2, the provider retrying the same event'
INSERT INTO fulfilments (event_id, order_id)
SELECT 'evt_1001', 7 WHERE idem.claim('evt_1001', 'payments', fingerprint => 'order=7;amount=42.00');
SELECT order_id, count(*) AS times_fulfilled FROM fulfilments GROUP BY order_id;

\echo '-- idem.once stores the first response and replays it to the retry'
SELECT idem.once('evt_1002', $$SELECT 8 AS order_id, 'shipped' AS status$$, 'payments') AS first_response;
SELECT idem.once('evt_1002', $$SELECT 8 AS order_id, 'shipped' AS status$$, 'payments') AS replayed_response;

\echo '-- the same event id sent with a different body is refused, not run twice'
\set ON_ERROR_STOP 0
INSERT INTO fulfilments (event_id, order_id)
SELECT 'evt_1001', 9 WHERE idem.claim('evt_1001', 'payments', fingerprint => 'order=9;amount=99.00');
\set ON_ERROR_STOP 1
\echo
