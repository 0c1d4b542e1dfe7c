-- idem.merge: new keys inserted, changed rows updated, unchanged rows never
-- touched (api.md section 2).
CREATE TABLE m_target (id int PRIMARY KEY, name text, amount numeric, score float8, doc json);
CREATE TABLE m_source (id int, name text, amount numeric, score float8, doc json);
INSERT INTO m_source SELECT g, 'name ' || g, g / 10.0, g * 1.5, json_build_object('g', g)
  FROM generate_series(1, 10000) g;

-- First load: every row inserted.
SELECT * FROM idem.merge('m_target', 'm_source');
SELECT idem.checksum('m_target') = idem.checksum('m_source') AS target_equals_source;

-- Replay: unchanged = n, and not one row was rewritten, locked or logged.
CREATE TABLE m_before AS SELECT id, ctid AS row_ctid, xmin::text AS row_xmin, xmax::text AS row_xmax FROM m_target;
BEGIN;
SELECT * FROM idem.merge('m_target', 'm_source');
SELECT count(*) AS rows_rewritten_or_locked
  FROM m_before b JOIN m_target t ON t.id = b.id
 WHERE t.ctid <> b.row_ctid OR t.xmin::text <> b.row_xmin OR t.xmax::text <> b.row_xmax;
COMMIT;
-- WAL of a replay of 10,000 rows, measured by EXPLAIN (WAL) for the one
-- statement (SPI inside it included): a few kB at most, against the naive
-- upsert that logs every row.
CREATE FUNCTION wal_bytes(sql text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, WAL, FORMAT JSON) ' || sql INTO plan;
  RETURN coalesce((plan->0->'Plan'->>'WAL Bytes')::bigint, 0);
END $$;
SELECT wal_bytes($$SELECT * FROM idem.merge('m_target', 'm_source')$$) < 65536 AS replay_wal_under_64kb;
-- The check can fail: ON CONFLICT ... DO UPDATE ... WHERE still locks (and
-- logs) every row it skips.
BEGIN;
SELECT wal_bytes($$INSERT INTO m_target SELECT * FROM m_source ON CONFLICT (id) DO UPDATE
                  SET name = EXCLUDED.name WHERE m_target.name IS DISTINCT FROM EXCLUDED.name$$) > 65536 AS on_conflict_where_logs;
SELECT count(*) > 0 AS on_conflict_where_locked_rows FROM m_target WHERE xmax::text <> '0';
ROLLBACK;

-- Changes: exactly the changed rows are updated. 1.0 -> 1.00 and 0 -> -0
-- are changes (the stored image differs); json works without an = operator.
UPDATE m_source SET amount = 1.00 WHERE id = 10;             -- was 1.00000000000000000000 (10 / 10.0)
UPDATE m_source SET score = '-0' WHERE id = 1;               -- was 1.5
UPDATE m_source SET score = '0' WHERE id = 2;                -- was 3.0
UPDATE m_source SET doc = '{"g" : 3}' WHERE id = 3;          -- json_build_object wrote exactly this text: unchanged
UPDATE m_source SET name = 'renamed' WHERE id = 4;
INSERT INTO m_source VALUES (10001, 'new', 1, 1, NULL);
SELECT * FROM idem.merge('m_target', 'm_source');
SELECT * FROM idem.merge('m_target', 'm_source');
UPDATE m_target SET score = '0' WHERE id = 1;
SELECT * FROM idem.merge('m_target', 'm_source') AS zero_to_minus_zero;
SELECT idem.checksum('m_target') = idem.checksum('m_source') AS target_equals_source;

-- dry_run: the same counts, nothing written.
UPDATE m_source SET name = 'dry' WHERE id BETWEEN 1 AND 5;
INSERT INTO m_source VALUES (20000, 'dry new', 0, 0, NULL);
SELECT idem.checksum('m_target') AS before_dry \gset
SELECT * FROM idem.merge('m_target', 'm_source', dry_run => true);
SELECT idem.checksum('m_target') = :'before_dry' AS dry_run_wrote_nothing;
SELECT * FROM idem.merge('m_target', 'm_source');

-- Property: merge calls a row unchanged exactly when the checksum sees the
-- target row and the (converted) source row as the same. Random changes,
-- half of them no-ops of the "equal but not the same" kind.
SELECT setseed(0.77);
CREATE TABLE p_target (id int PRIMARY KEY, n numeric(8,3), f float8, t text, j jsonb);
INSERT INTO p_target SELECT g, (g % 7) / 3.0, (g % 5) - 2, 'v' || (g % 3), jsonb_build_object('k', g % 4)
  FROM generate_series(1, 400) g;
CREATE TABLE p_source AS SELECT * FROM p_target;
ALTER TABLE p_source ALTER COLUMN n TYPE numeric;  -- converted on the way in
UPDATE p_source SET
  n = CASE WHEN random() < 0.2 THEN n + 1 WHEN random() < 0.2 THEN round(n, 3) ELSE n END,
  f = CASE WHEN random() < 0.1 THEN -f ELSE f END,
  t = CASE WHEN random() < 0.1 THEN upper(t) ELSE t END,
  j = CASE WHEN random() < 0.1 THEN '{"k": 9}' ELSE j END;
CREATE TABLE p_same AS
SELECT s.id FROM p_source s JOIN p_target t USING (id)
 WHERE idem.checksum_query(format('SELECT id, n::numeric(8,3), f, t, j FROM p_source WHERE id = %s', s.id))
     = idem.checksum_query(format('SELECT * FROM p_target WHERE id = %s', s.id));
SELECT count(*) > 100 AS some_same, count(*) < 400 AS some_changed FROM p_same;
SELECT m.unchanged = (SELECT count(*) FROM p_same) AS unchanged_matches_checksum,
       m.updated = 400 - (SELECT count(*) FROM p_same) AS updated_matches_checksum
  FROM idem.merge('p_target', 'p_source') m;
SELECT idem.checksum('p_target') = idem.checksum_query('SELECT id, n::numeric(8,3), f, t, j FROM p_source') AS converged;

-- Sources: a view, a temporary table, a query; identical duplicates collapse.
CREATE VIEW m_view AS SELECT id, name FROM m_source WHERE id <= 3;
CREATE TABLE m_narrow (id int PRIMARY KEY, name text);
SELECT * FROM idem.merge('m_narrow', 'm_view');
CREATE TEMP TABLE m_temp (id int, name text);
INSERT INTO m_temp VALUES (3, 'three'), (4, 'four'), (4, 'four');
SELECT * FROM idem.merge('m_narrow', 'm_temp');
SELECT * FROM idem.merge_query('m_narrow', $$SELECT 5 AS id, 'five' AS name UNION ALL SELECT 5, 'five'$$);
SELECT * FROM idem.merge_query('m_narrow', 'SELECT * FROM m_narrow');
SELECT * FROM m_narrow ORDER BY id;

-- Composite keys and keys of other btree types; the default key is the
-- primary key, any other unique index can be named.
CREATE TABLE m_composite (day date, store text, sku uuid, qty int, PRIMARY KEY (day, store, sku));
-- (Columns match by name: VALUES without names has no "day".)
SELECT show_error($$SELECT * FROM idem.merge_query('m_composite', 'VALUES (''2024-07-07''::date, ''A'', NULL::uuid, 1)')$$);
SELECT * FROM idem.merge_query('m_composite', $$SELECT '2024-07-07'::date AS day, 'A' AS store,
  '00000000-0000-0000-0000-000000000001'::uuid AS sku, 1 AS qty UNION ALL
  SELECT '2024-07-07', 'B', '00000000-0000-0000-0000-000000000001', 2$$);
SELECT * FROM idem.merge_query('m_composite', $$SELECT '2024-07-07'::date AS day, 'A' AS store,
  '00000000-0000-0000-0000-000000000001'::uuid AS sku, 5 AS qty$$, key => ARRAY['store', 'day', 'sku']);
SELECT * FROM m_composite ORDER BY store;
CREATE TABLE m_alt (id serial PRIMARY KEY, code text NOT NULL UNIQUE, label text);
SELECT * FROM idem.merge_query('m_alt', $$SELECT 'x' AS code, 'first' AS label$$, key => '{code}');
SELECT * FROM idem.merge_query('m_alt', $$SELECT 'x' AS code, 'second' AS label$$, key => '{code}');
SELECT code, label FROM m_alt;

-- citext keys compare the way their unique index does (case-insensitively).
CREATE EXTENSION citext;
CREATE TABLE m_ci (email citext PRIMARY KEY, name text);
INSERT INTO m_ci VALUES ('Ann@Example.com', 'Ann');
SELECT * FROM idem.merge_query('m_ci', $$SELECT 'ann@example.COM'::citext AS email, 'Ann B' AS name$$);
SELECT * FROM m_ci;

-- A partitioned target (the key includes the partition key).
CREATE TABLE m_sales (day date, store int, revenue numeric, PRIMARY KEY (day, store)) PARTITION BY RANGE (day);
CREATE TABLE m_sales_0707 PARTITION OF m_sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE m_sales_0708 PARTITION OF m_sales FOR VALUES FROM ('2024-07-08') TO ('2024-07-09');
SELECT * FROM idem.merge_query('m_sales', $$SELECT * FROM (VALUES ('2024-07-07'::date, 1, 10.0), ('2024-07-08'::date, 1, 20.0)) v(day, store, revenue)$$);
SELECT * FROM idem.merge_query('m_sales', $$SELECT * FROM (VALUES ('2024-07-07'::date, 1, 10.0), ('2024-07-08'::date, 1, 21.0)) v(day, store, revenue)$$);
SELECT tableoid::regclass, * FROM m_sales ORDER BY day;

-- Triggers fire once per real change, never for unchanged rows.
CREATE TABLE m_audit (op text, id int);
CREATE FUNCTION m_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO m_audit VALUES (TG_OP, coalesce(NEW.id, OLD.id));
  RETURN coalesce(NEW, OLD);
END $$;
CREATE TRIGGER m_narrow_audit AFTER INSERT OR UPDATE OR DELETE ON m_narrow
  FOR EACH ROW EXECUTE FUNCTION m_audit_row();
SELECT * FROM idem.merge_query('m_narrow', $$SELECT * FROM (VALUES (1, 'name 1'), (2, 'changed'), (6, 'six')) v(id, name)$$);
SELECT * FROM idem.merge_query('m_narrow', $$SELECT * FROM (VALUES (1, 'name 1'), (2, 'changed'), (6, 'six')) v(id, name)$$);
SELECT op, id FROM m_audit ORDER BY op, id;

-- delete_missing: the source is the whole truth (of delete_scope).
CREATE TABLE m_snap (id int PRIMARY KEY, region text, v int);
INSERT INTO m_snap VALUES (1, 'eu', 1), (2, 'eu', 2), (3, 'us', 3), (4, 'us', 4);
SELECT * FROM idem.merge_query('m_snap', $$SELECT 1 AS id, 'eu' AS region, 1 AS v$$,
                               delete_missing => true, delete_scope => $$region = 'eu'$$);
SELECT * FROM m_snap ORDER BY id;
SELECT * FROM idem.merge_query('m_snap', $$SELECT 3 AS id, 'us' AS region, 30 AS v$$, delete_missing => true);
SELECT * FROM m_snap ORDER BY id;
-- An empty snapshot is refused (a failed extract must not wipe the table)...
SELECT show_error($$SELECT * FROM idem.merge_query('m_snap', 'SELECT 1 AS id, ''x'' AS region, 1 AS v WHERE false', delete_missing => true)$$);
SELECT count(*) AS still_there FROM m_snap;
-- ...unless allow_empty says it is real.
SELECT * FROM idem.merge_query('m_snap', 'SELECT 1 AS id, ''x'' AS region, 1 AS v WHERE false',
                               delete_missing => true, allow_empty => true);
SELECT count(*) AS now_empty FROM m_snap;
-- An empty source without delete_missing is simply nothing to do.
SELECT * FROM idem.merge_query('m_snap', 'SELECT 1 AS id, ''x'' AS region, 1 AS v WHERE false');

-- A source table unique on the key (its primary key) is not copied or
-- deduplicated: the checks that cannot fail are left out of the statement.
CREATE TABLE m_pk_source (id int PRIMARY KEY, name text);
INSERT INTO m_pk_source SELECT g, 'pk ' || g FROM generate_series(1, 50) g;
CREATE TABLE m_pk_target (id int PRIMARY KEY, name text);
SELECT * FROM idem.merge('m_pk_target', 'm_pk_source');
SELECT * FROM idem.merge('m_pk_target', 'm_pk_source');
UPDATE m_pk_source SET name = 'changed' WHERE id % 10 = 0;
SELECT * FROM idem.merge('m_pk_target', 'm_pk_source', dry_run => true);
SELECT * FROM idem.merge('m_pk_target', 'm_pk_source');
SELECT idem.checksum('m_pk_target') = idem.checksum('m_pk_source') AS converged;

-- A source without an index: repeated keys (identical rows) collapse, the
-- others pass as they are, and each key counts once. Key and columns named
-- like the statement's own (n, top, r, src) do not clash with it.
CREATE TABLE m_names (n int PRIMARY KEY, top text, r int, src int);
CREATE TABLE m_names_src (n int, top text, r int, src int);
INSERT INTO m_names_src VALUES (1, 'a', 1, 1), (2, 'b', 2, 2), (2, 'b', 2, 2), (3, 'c', 3, 3), (3, 'c', 3, 3), (3, 'c', 3, 3);
SELECT * FROM idem.merge('m_names', 'm_names_src');
SELECT * FROM idem.merge('m_names', 'm_names_src');
UPDATE m_names_src SET r = 20 WHERE n = 2;
SELECT * FROM idem.merge('m_names', 'm_names_src', dry_run => true);
SELECT * FROM idem.merge('m_names', 'm_names_src');
SELECT * FROM m_names ORDER BY n;
SELECT * FROM idem.merge('m_names', 'm_names_src', version_column => 'r');
