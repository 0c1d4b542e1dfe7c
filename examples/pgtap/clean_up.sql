-- Included (\ir) by test/40_webhooks.sql before and after its tests: that
-- file commits, like real deliveries do, so it removes what it created - the
-- example's rows and the idempotency keys it claimed. For a test database
-- only: it empties the example's tables.
DO $$
BEGIN
  TRUNCATE shop.raw_orders, shop.orders, shop.outbox, shop.payments;
  -- idem.forget deletes a key, so that the next run of the file starts fresh.
  PERFORM idem.forget(k, s)
     FROM (VALUES ('evt_1001', 'shop.payments'), ('evt_1002', 'shop.payments'),
                  ('order-shipped:1', 'shop.outbox'), ('order-shipped:3', 'shop.outbox')) AS v(k, s);
END
$$;
