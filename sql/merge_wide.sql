-- Rows wider than one idem._images_equal call (at most 50 pairs of columns):
-- a change in any column, the first call's or a later one's, is seen, and
-- an unchanged row is left alone, in merge, append and snapshot.
SELECT format('CREATE TABLE %I (id int PRIMARY KEY, %s)', t,
              string_agg(format('c%s int', i), ', ' ORDER BY i))
  FROM unnest(ARRAY['w_target', 'w_source', 'w_log']) t, generate_series(1, 120) i
 GROUP BY t \gexec
CREATE TABLE w_hist (LIKE w_source);
ALTER TABLE w_hist ALTER COLUMN id DROP NOT NULL, ADD COLUMN valid_from timestamptz, ADD COLUMN valid_to timestamptz;
SELECT idem.snapshot_prepare('w_hist', ARRAY['id'], valid_to => 'valid_to');
SELECT format('INSERT INTO w_source SELECT g, %s FROM generate_series(1, 4) g',
              string_agg(format('g * 1000 + %s', i), ', ' ORDER BY i))
  FROM generate_series(1, 120) i \gexec

SELECT inserted, updated, unchanged FROM idem.merge('w_target', 'w_source');
SELECT inserted, duplicate, conflicting FROM idem.append('w_log', 'w_source');
SELECT * FROM idem.snapshot('w_hist', 'w_source', ARRAY['id']);
-- Key 2 changes in column 1 (the first call), key 3 in column 75 (the
-- second), key 4 in column 120 (the last); key 1 stays.
UPDATE w_source SET c1 = -1 WHERE id = 2;
UPDATE w_source SET c75 = -75 WHERE id = 3;
UPDATE w_source SET c120 = -120 WHERE id = 4;
CREATE TABLE w_before AS SELECT id, xmin::text AS row_xmin FROM w_target;
SELECT inserted, updated, unchanged FROM idem.merge('w_target', 'w_source');
SELECT t.id, t.xmin::text = b.row_xmin AS untouched
  FROM w_target t JOIN w_before b USING (id) ORDER BY t.id;
SELECT idem.checksum('w_target') = idem.checksum('w_source') AS target_equals_source;
-- append: the changed events are conflicts (the same id, other content).
SELECT inserted, duplicate, conflicting FROM idem.append('w_log', 'w_source', on_conflict => 'keep_first');
SELECT * FROM idem.snapshot('w_hist', 'w_source', ARRAY['id']);
SELECT id, count(*) AS versions FROM w_hist GROUP BY id ORDER BY id;
-- The checksum of a row wider than an aggregate call takes (100 arguments)
-- is the digest receiver's; replace_where of such rows, its identical rerun
-- and a real change.
SELECT idem.checksum('w_target') = idem.checksum_query('SELECT * FROM w_source') AS checksum_query_agrees;
SELECT deleted, inserted, action FROM idem.replace_where('w_target', 'id <= 2', 'SELECT * FROM w_source WHERE id <= 2');
SELECT deleted, inserted, action FROM idem.replace_where('w_target', 'id <= 2', 'SELECT * FROM w_source WHERE id <= 2');
UPDATE w_source SET c99 = -99 WHERE id = 1;
SELECT deleted, inserted, action FROM idem.replace_where('w_target', 'id <= 2', 'SELECT * FROM w_source WHERE id <= 2');
SELECT idem.checksum('w_target') = idem.checksum('w_source') AS target_equals_source_again;
