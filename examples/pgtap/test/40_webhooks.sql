-- Keys across transactions: a webhook delivered twice, and an outbox that the
-- sender empties between two runs of the job.
--
-- An idempotency key claimed earlier in the *same* transaction belongs to
-- that transaction, so claim answers true again: a test that delivers twice
-- inside one transaction tests nothing. A provider's retry is a new request
-- and a new transaction, so this file does not wrap itself in one: every
-- statement below commits on its own, as the deliveries would. It therefore
-- cleans up after itself, and before itself in case an earlier run stopped
-- half-way. Run it in a test database only: the clean-up empties the
-- example's tables.
--
-- (Two deliveries at the same moment: the second waits for the first's
-- transaction and then sees its outcome. That needs two sessions; the
-- extension's own isolation test test/specs/keys_webhook.spec plays it.)

\ir ../clean_up.sql

SELECT plan(9);

-- The payment provider delivers event evt_1001, and again (it did not get
-- our 200 in time).
SELECT ok(shop.handle_payment('evt_1001', '{"order_id": 1, "amount": 120.00}'),
          'the first delivery records the payment');
SELECT ok(NOT shop.handle_payment('evt_1001', '{"order_id": 1, "amount": 120.00}'),
          'the second delivery is recognised and does nothing');
SELECT is((SELECT count(*) FROM shop.payments WHERE event_id = 'evt_1001'), 1::bigint,
          'the payment is recorded once');
SELECT is((SELECT state FROM idem.key_status('evt_1001', 'shop.payments')), 'done',
          'the key is done');

-- The same event id with another body: a bug upstream, refused loudly.
SELECT throws_ok(
  $$SELECT shop.handle_payment('evt_1001', '{"order_id": 1, "amount": 999.00}')$$,
  'ID001', 'idempotency key "evt_1001" in scope "shop.payments" was used for a different request',
  'the same event id with a different body raises ID001');

-- A delivery whose transaction fails (here: rolled back) leaves no key, so
-- the provider's retry does the work.
BEGIN;
SELECT shop.handle_payment('evt_1002', '{"order_id": 3, "amount": 200.00}') AS first_try \gset
ROLLBACK;
SELECT ok(shop.handle_payment('evt_1002', '{"order_id": 3, "amount": 200.00}'),
          'after a rolled-back delivery, the retry records the payment');

-- The outbox: the job queues one notification per shipped order and
-- commits; the sender delivers them and deletes the rows; the job reruns.
-- The outbox is empty now, so only the keys remember what was queued.
\ir ../fixtures.sql
SELECT * FROM shop.load_orders('2024-07-07') \gset
SELECT is(shop.queue_shipped_notifications('2024-07-07'), 2::bigint,
          'the job queues notifications for the 2 shipped orders');
DELETE FROM shop.outbox;
SELECT is(shop.queue_shipped_notifications('2024-07-07'), 0::bigint,
          'its rerun, after the sender emptied the outbox, queues none again');
SELECT is_empty('SELECT * FROM shop.outbox', 'the outbox stays empty');

SELECT * FROM finish();
\ir ../clean_up.sql
