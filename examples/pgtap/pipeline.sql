-- An example pipeline, written to be rerun-safe with pg_idempotent, and the
-- object of the pgTAP tests in test/*.sql. Copy it, rename it, make it yours.
--
-- The story: a shop receives a daily extract of its orders (shop.raw_orders,
-- one row per order version; the same order can arrive again with a higher
-- version when it is corrected). The nightly job shop.load_day(day):
--
--   1. merges the day's orders into shop.orders on the business key
--      (order_id), newest version wins, orders gone from the extract are
--      deleted                                       -> idem.merge_query
--   2. rebuilds that day's partition of the report shop.daily_revenue
--                                                    -> idem.overwrite_partition
--   3. queues one "order shipped" notification per shipped order in an
--      outbox, however often the job runs            -> idem.claim_many
--   4. moves the job's checkpoint to the day         -> idem.advance
--
-- all in the caller's transaction: the data and the checkpoint commit
-- together or not at all. Separately, shop.handle_payment() is a webhook
-- handler that a payment provider may call twice for one event
-- (-> idem.claim with a fingerprint).
--
-- Load this file into a test database that has pg_idempotent installed
-- (see README.md). It creates schema shop and nothing outside it.

CREATE SCHEMA shop;

-- The extract as it lands: several versions of one order may be present.
CREATE TABLE shop.raw_orders (
  order_id bigint NOT NULL,
  version  int    NOT NULL,          -- the source system's row version
  day      date   NOT NULL,
  store    text   NOT NULL,
  amount   numeric(12,2) NOT NULL,
  status   text   NOT NULL           -- 'new', 'shipped', 'cancelled'
);

-- The merged orders. The primary key is what idem.merge matches on.
CREATE TABLE shop.orders (
  order_id bigint PRIMARY KEY,
  version  int    NOT NULL,
  day      date   NOT NULL,
  store    text   NOT NULL,
  amount   numeric(12,2) NOT NULL,
  status   text   NOT NULL
);
CREATE INDEX orders_day ON shop.orders (day);

-- The report: one partition per day, owned by the job for that day.
CREATE TABLE shop.daily_revenue (
  day     date NOT NULL,
  store   text NOT NULL,
  orders  int  NOT NULL,
  revenue numeric(12,2) NOT NULL
) PARTITION BY RANGE (day);

-- Outbound notifications for a sender process to deliver (and delete).
-- Deleting a sent row must not let the next rerun queue it again, which is
-- why the job claims an idempotency key per notification rather than
-- relying on this table's contents.
CREATE TABLE shop.outbox (
  event_key text PRIMARY KEY,
  order_id  bigint NOT NULL,
  payload   jsonb  NOT NULL,
  queued_at timestamptz NOT NULL DEFAULT now()   -- differs between runs in different transactions
);

-- Payments recorded by the webhook handler.
CREATE TABLE shop.payments (
  event_id text PRIMARY KEY,
  order_id bigint NOT NULL,
  amount   numeric(12,2) NOT NULL
);

-- Step 1: merge the day's extract into shop.orders.
-- version_column: a replayed or older version is "stale" and not applied,
--   a higher one updates the row; an unchanged row is not written at all.
-- delete_missing + delete_scope: the extract is the complete list of the
--   day's orders, so an order missing from it is deleted - but only within
--   that day. An empty extract is an error (22023), not a wiped day.
CREATE FUNCTION shop.load_orders(p_day date)
  RETURNS TABLE (inserted bigint, updated bigint, deleted bigint, unchanged bigint, stale bigint)
  LANGUAGE sql
AS $$
  SELECT * FROM idem.merge_query(
    'shop.orders',
    format('SELECT order_id, version, day, store, amount, status FROM shop.raw_orders WHERE day = %L', p_day),
    version_column => 'version',
    delete_missing => true,
    delete_scope   => format('day = %L', p_day))
$$;

-- Step 2: rebuild the day's partition of the report from shop.orders.
-- When the rows come out the same as stored, overwrite_partition writes
-- nothing and says 'skipped'. The partition is created on first use; the
-- existence check keeps a rerun free of DDL.
CREATE FUNCTION shop.build_daily_revenue(p_day date)
  RETURNS TABLE (action text, row_count bigint)
  LANGUAGE plpgsql
AS $$
DECLARE
  part text := 'daily_revenue_' || to_char(p_day, 'YYYYMMDD');
BEGIN
  IF to_regclass(format('shop.%I', part)) IS NULL THEN
    EXECUTE format('CREATE TABLE shop.%I PARTITION OF shop.daily_revenue FOR VALUES FROM (%L) TO (%L)',
                   part, p_day, p_day + 1);
  END IF;
  RETURN QUERY
    SELECT o.action, o.row_count
      FROM idem.overwrite_partition('shop.daily_revenue', p_day,
             format($q$SELECT day, store, count(*)::int, sum(amount)
                         FROM shop.orders
                        WHERE day = %L AND status <> 'cancelled'
                        GROUP BY day, store$q$, p_day)) AS o;
END
$$;

-- Step 3: queue one notification per shipped order, once per order ever.
-- claim_many returns the keys this transaction now owns: a rerun in a later
-- transaction gets none of the keys an earlier run committed, even after
-- the sender has delivered and deleted the outbox rows, so nothing is
-- queued twice. A rerun inside the *same* transaction (idem.assert_rerun_safe,
-- a test that calls the job twice before rolling back) owns the keys
-- already and gets them again; ON CONFLICT DO NOTHING makes that case a
-- no-op too.
CREATE FUNCTION shop.queue_shipped_notifications(p_day date)
  RETURNS bigint
  LANGUAGE sql
AS $$
  WITH shipped AS (
    SELECT order_id, 'order-shipped:' || order_id AS event_key
      FROM shop.orders
     WHERE day = p_day AND status = 'shipped'
  ), mine AS (
    SELECT k AS event_key
      FROM idem.claim_many(ARRAY(SELECT event_key FROM shipped ORDER BY event_key), 'shop.outbox') AS k
  ), queued AS (
    INSERT INTO shop.outbox (event_key, order_id, payload)
    SELECT s.event_key, s.order_id, jsonb_build_object('type', 'order.shipped', 'order_id', s.order_id)
      FROM shipped s JOIN mine m USING (event_key)
    ON CONFLICT (event_key) DO NOTHING
    RETURNING 1
  )
  SELECT count(*) FROM queued
$$;

-- The job. A procedure without COMMIT: the scheduler's transaction (or the
-- test's) decides when it all becomes visible.
-- The checkpoint: idem.advance never moves backwards (22023), so a stale
-- run of an older day fails and its writes above roll back with it. To
-- reload an older day on purpose, call idem.rewind('shop.load_day', day)
-- first; it is recorded in idem.checkpoint_log.
CREATE PROCEDURE shop.load_day(p_day date)
  LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM shop.load_orders(p_day);
  PERFORM shop.build_daily_revenue(p_day);
  PERFORM shop.queue_shipped_notifications(p_day);
  PERFORM idem.advance('shop.load_day', p_day);
END
$$;

-- The webhook handler: the provider retries until it gets a 2xx, so the
-- same event arrives more than once. The claim and the insert are in the
-- caller's transaction: a rolled-back delivery leaves no key behind, and a
-- concurrent duplicate waits for the first one's outcome.
-- The fingerprint is a hash of the body: the same event id with another
-- body is a bug on the sender's side and raises ID001 instead of being
-- silently ignored. Returns true when this call did the work.
-- Each delivery is its own transaction. (Within one transaction a key
-- claimed earlier belongs to that transaction, so claim would answer true
-- again: the tests deliver twice in two transactions, as the provider does.)
CREATE FUNCTION shop.handle_payment(p_event_id text, p_body jsonb)
  RETURNS boolean
  LANGUAGE plpgsql
AS $$
BEGIN
  IF NOT idem.claim(p_event_id, 'shop.payments', fingerprint => md5(p_body::text)) THEN
    RETURN false;   -- already done by an earlier delivery: answer 200 again
  END IF;
  INSERT INTO shop.payments (event_id, order_id, amount)
  VALUES (p_event_id, (p_body->>'order_id')::bigint, (p_body->>'amount')::numeric);
  RETURN true;
END
$$;

-- The customers' history (slowly changing dimension, type 2): every version
-- of a customer with the interval in which it was current. The nightly
-- snapshot keeps it; the partial unique index snapshot_prepare creates
-- allows one current version per customer, whatever runs at once.
CREATE TABLE shop.customers (
  customer_id bigint PRIMARY KEY,
  name        text NOT NULL,
  tier        text                  -- NULL until a customer has a tier
);
CREATE TABLE shop.customers_history (
  customer_id bigint NOT NULL,
  name        text NOT NULL,
  tier        text,
  valid_from  timestamptz NOT NULL,
  valid_to    timestamptz           -- NULL: the current version
);
SELECT idem.snapshot_prepare('shop.customers_history', '{customer_id}');

-- The snapshot at the end of a day (as_of: a backfill or a rerun of that
-- day means the same time, and versions never overlap); customers deleted
-- from the source are closed.
CREATE FUNCTION shop.snapshot_customers(p_day date)
  RETURNS TABLE(inserted bigint, changed bigint, deleted bigint, unchanged bigint, stale bigint)
  LANGUAGE sql
AS $$
  SELECT * FROM idem.snapshot('shop.customers_history', 'shop.customers', '{customer_id}',
                              hard_deletes => 'invalidate', as_of => (p_day + 1)::timestamptz);
$$;
