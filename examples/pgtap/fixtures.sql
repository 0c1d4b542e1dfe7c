-- Test data for the example pipeline, included by each test file (\ir) inside
-- its transaction, so that it is rolled back with the test.
--
-- 2024-07-07: six orders in three stores. Order 2 is in the extract twice:
-- version 1 and its correction, version 2 (the merge keeps version 2).
-- Order 5 is cancelled (left out of the report). Orders 1 and 3 shipped.
-- 2024-07-08: three more orders, order 7 shipped.
INSERT INTO shop.raw_orders (order_id, version, day, store, amount, status) VALUES
  (1, 1, '2024-07-07', 'store 1', 120.00, 'shipped'),
  (2, 1, '2024-07-07', 'store 1',  80.00, 'new'),
  (2, 2, '2024-07-07', 'store 1',  85.50, 'new'),
  (3, 1, '2024-07-07', 'store 2', 200.00, 'shipped'),
  (4, 1, '2024-07-07', 'store 2',  15.25, 'new'),
  (5, 1, '2024-07-07', 'store 3',  99.99, 'cancelled'),
  (6, 1, '2024-07-07', 'store 3',  42.00, 'new'),
  (7, 1, '2024-07-08', 'store 1',  10.00, 'shipped'),
  (8, 1, '2024-07-08', 'store 2',  20.00, 'new'),
  (9, 1, '2024-07-08', 'store 2',  30.00, 'new');
