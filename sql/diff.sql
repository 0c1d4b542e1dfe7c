-- idem.diff: the rows present more often on one side than the other,
-- compared by stored image (the one definition of "the same row").
CREATE TABLE diff_a (id int, amount numeric, tags json);
CREATE TABLE diff_b (id int, amount numeric, tags json);
INSERT INTO diff_a VALUES (1, 1.0, '{"x":1}'), (2, 2, '[]'), (3, 3, NULL), (3, 3, NULL), (4, 4, '{}');
INSERT INTO diff_b VALUES (1, 1.00, '{"x":1}'), (2, 2, '[]'), (3, 3, NULL), (5, 5, '{}'), (5, 5, '{}');

-- 1.0 -> 1.00 is a change; a row twice against once is one extra copy; json
-- columns work although json has no equality operator.
SELECT * FROM idem.diff('diff_a', 'diff_b');

-- Identical tables: no rows. A table against itself: no rows.
CREATE TABLE diff_a_copy AS SELECT * FROM diff_a ORDER BY id DESC;
SELECT count(*) AS differences FROM idem.diff('diff_a', 'diff_a_copy');
SELECT count(*) AS differences FROM idem.diff('diff_a', 'diff_a');

-- max_rows bounds the output; exclude_columns applies to both sides.
SELECT count(*) AS limited FROM idem.diff('diff_a', 'diff_b', max_rows => 2);
SELECT * FROM idem.diff('diff_a', 'diff_b', exclude_columns => '{amount}');

-- Shapes that cannot be compared: loud.
CREATE TABLE diff_c (id int, amount text, tags json);
CREATE TABLE diff_d (id int, amount numeric);
SELECT show_error($$SELECT * FROM idem.diff('diff_a', 'diff_c')$$);
SELECT show_error($$SELECT * FROM idem.diff('diff_a', 'diff_d')$$);
SELECT show_error($$SELECT * FROM idem.diff('diff_a', 'diff_b', '{nope}')$$);
SELECT show_error($$SELECT * FROM idem.diff(NULL, 'diff_b')$$);
SELECT show_error($$SELECT * FROM idem.diff('diff_a', 'diff_b', max_rows => -1)$$);
SELECT show_error($$SELECT * FROM idem.diff('diff_a', 'diff_b', max_rows => NULL)$$);
