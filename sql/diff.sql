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

-- A row of more than 50 columns (jsonb_build_object takes 50 pairs: the
-- row's JSON is built in parts): every column named in row_data.
SELECT format('CREATE TABLE d_wide (%s)', string_agg(format('c%s int', g), ', ' ORDER BY g))
  FROM generate_series(1, 60) g \gexec
INSERT INTO d_wide SELECT g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g,
                          g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g * 10
  FROM generate_series(1, 2) g;
CREATE TABLE d_wide_b AS SELECT * FROM d_wide WHERE c1 = 1;
SELECT side, copies, (SELECT count(*) FROM jsonb_object_keys(row_data)) AS columns_named,
       row_data->>'c1' AS c1, row_data->>'c60' AS c60
  FROM idem.diff('d_wide', 'd_wide_b');
