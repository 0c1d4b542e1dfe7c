-- overwrite_partition(mode => 'swap') without keep_old replaces the
-- partition's storage (docs/overwrite.md, "Mode 'swap'"): the partition keeps
-- its OID and everything attached to it, its indexes are rebuilt from the
-- new rows, every constraint of the partition is checked, nothing else is
-- locked, and a failure changes nothing.

-- What the partition is, beyond its rows, by OID: compared before and after.
CREATE FUNCTION ss_identity(p regclass) RETURNS text LANGUAGE sql AS $$
  SELECT concat_ws(' | ',
    (SELECT string_agg(i.indexrelid::regclass || ' ' || i.indisvalid, ', ' ORDER BY i.indexrelid) FROM pg_index i WHERE i.indrelid = p),
    (SELECT string_agg(conname || ' ' || contype::text, ', ' ORDER BY conname) FROM pg_constraint WHERE conrelid = p AND contype <> 'n'),
    (SELECT string_agg(tgname, ', ' ORDER BY tgname) FROM pg_trigger WHERE tgrelid = p AND NOT tgisinternal),
    (SELECT string_agg(polname, ', ' ORDER BY polname) FROM pg_policy WHERE polrelid = p),
    (SELECT string_agg(stxname, ', ' ORDER BY stxname) FROM pg_statistic_ext WHERE stxrelid = p),
    (SELECT relacl::text || ' ' || relreplident::text || ' ' || relpersistence::text || ' ' || relispartition FROM pg_class WHERE oid = p),
    obj_description(p, 'pg_class'))
$$;

CREATE TABLE ss_stores (store text PRIMARY KEY);
INSERT INTO ss_stores VALUES ('a'), ('b'), ('c');
CREATE TABLE ss_sales (day date NOT NULL, id int NOT NULL, store text REFERENCES ss_stores,
                       gone1 text, amount numeric CHECK (amount >= 0), gone2 int, note text,
                       total numeric GENERATED ALWAYS AS (amount * 2) STORED,
                       PRIMARY KEY (day, id)) PARTITION BY RANGE (day);
-- Dropped columns: the partitions keep them as holes in their rows.
ALTER TABLE ss_sales DROP COLUMN gone1, DROP COLUMN gone2;
CREATE TABLE ss_sales_0707 PARTITION OF ss_sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE ss_sales_0708 PARTITION OF ss_sales FOR VALUES FROM ('2024-07-08') TO ('2024-07-09');
-- A partition attached with holes of its own and its columns in another order.
CREATE TABLE ss_sales_0709 (note text, gone3 int, id int NOT NULL, amount numeric, day date NOT NULL,
                            store text, total numeric GENERATED ALWAYS AS (amount * 2) STORED,
                            CONSTRAINT ss_sales_amount_check CHECK (amount >= 0));
ALTER TABLE ss_sales_0709 DROP COLUMN gone3;
ALTER TABLE ss_sales ATTACH PARTITION ss_sales_0709 FOR VALUES FROM ('2024-07-09') TO ('2024-07-10');
INSERT INTO ss_sales (day, id, store, amount, note)
  SELECT d, g, 'a', g, 'old' FROM generate_series(date '2024-07-07', date '2024-07-09', '1 day') d, generate_series(1, 3) g;
-- The partition's own things: an index, a CHECK, a NOT VALID CHECK, a
-- trigger, a policy, a grant, a statistics object, a comment, a replica
-- identity, a view over it.
CREATE INDEX ss_sales_0707_note ON ss_sales_0707 (note);
ALTER TABLE ss_sales_0707 ADD CONSTRAINT ss_small CHECK (id < 1000);
ALTER TABLE ss_sales_0707 ADD CONSTRAINT ss_not_b CHECK (store <> 'b') NOT VALID;
CREATE FUNCTION ss_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER ss_trg BEFORE INSERT ON ss_sales_0707 FOR EACH ROW EXECUTE FUNCTION ss_noop();
ALTER TABLE ss_sales_0707 ENABLE ROW LEVEL SECURITY;
CREATE POLICY ss_pol ON ss_sales_0707 USING (true);
CREATE ROLE ss_reader;
GRANT SELECT ON ss_sales_0707 TO ss_reader;
CREATE STATISTICS ss_stats ON store, amount FROM ss_sales_0707;
COMMENT ON TABLE ss_sales_0707 IS 'the seventh';
ALTER TABLE ss_sales_0707 REPLICA IDENTITY USING INDEX ss_sales_0707_pkey;
CREATE VIEW ss_view AS SELECT id, amount, note, total FROM ss_sales_0707;
SELECT 'ss_sales_0707'::regclass::oid AS p0707 \gset
SELECT ss_identity('ss_sales_0707') AS identity_before \gset

SELECT action, row_count, rows_before FROM idem.overwrite_partition('ss_sales', '2024-07-07'::date,
  $$SELECT '2024-07-07'::date AS day, g AS id, 'c' AS store, g * 10 AS amount, repeat('n', 3000 * (g % 2)) || g AS note
      FROM generate_series(1, 500) g$$, mode => 'swap');
-- The same table, everything attached to it as it was.
SELECT 'ss_sales_0707'::regclass::oid = :p0707 AS same_oid,
       ss_identity('ss_sales_0707') = :'identity_before' AS same_identity,
       (SELECT count(*) FROM pg_class WHERE relname LIKE 'ss_sales_0707__idem%') AS staging_left;
-- The rows, the generated column, a toasted value, through the view and the
-- parent; the holes do not shift a column.
SELECT count(*), sum(total) = 2 * sum(amount) AS generated, max(length(note)) AS longest FROM ss_view;
SELECT day, id, store, amount, left(note, 5) AS note, total FROM ss_sales WHERE id IN (1, 2) ORDER BY day, id;
SELECT c.reltoastrelid::regclass::text = 'pg_toast.pg_toast_' || c.oid AS toast_named_for_it
  FROM pg_class c WHERE c.oid = 'ss_sales_0707'::regclass;
-- The indexes hold the new rows: found through each, the plans show it.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM ss_sales_0707 WHERE note = 'n1';
SELECT count(*) AS by_note FROM ss_sales_0707 WHERE note IN ('2', '4', '6');
EXPLAIN (COSTS OFF) SELECT note FROM ss_sales_0707 WHERE day = '2024-07-07' AND id = 250;
SELECT note FROM ss_sales_0707 WHERE day = '2024-07-07' AND id = 250;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- The partitions with holes of their own.
SELECT action FROM idem.overwrite_partition('ss_sales', '2024-07-09'::date,
  $$SELECT '2024-07-09'::date, 7, 'b', 7.5, 'new'$$, mode => 'swap');
SELECT * FROM ss_sales_0709;
SELECT day, id, store, amount, note, total FROM ss_sales WHERE day = '2024-07-09';
-- The rerun: the record of the swap holds, nothing is written.
SELECT action FROM idem.overwrite_partition('ss_sales', '2024-07-09'::date,
  $$SELECT '2024-07-09'::date, 7, 'b', 7.5, 'new'$$, mode => 'swap');

-- Every constraint of the partition binds the new rows; a failure names it
-- and changes nothing.
CREATE FUNCTION ss_try(q text) RETURNS text LANGUAGE sql AS $f$
  SELECT show_error(format('SELECT * FROM idem.overwrite_partition(%L, %L::date, %L, mode => %L)',
                           'ss_sales', '2024-07-07', q, 'swap'))
$f$;
SELECT ss_try($$SELECT '2024-07-08'::date, 1, 'a', 1, 'outside'$$) AS outside_bound;
SELECT ss_try($$SELECT '2024-07-07'::date, 1, 'a', -1, 'negative'$$) AS inherited_check;
SELECT ss_try($$SELECT '2024-07-07'::date, 5000, 'a', 1, 'large'$$) AS own_check;
SELECT ss_try($$SELECT '2024-07-07'::date, 1, 'b', 1, 'b'$$) AS not_valid_check;
SELECT ss_try($$SELECT '2024-07-07'::date, 1, 'z', 1, 'no store'$$) AS foreign_key;
SELECT ss_try($$SELECT '2024-07-07'::date, 1, 'a', 1, 'twice' UNION ALL SELECT '2024-07-07'::date, 1, 'a', 2, 'twice'$$) AS primary_key;
SELECT ss_try($$SELECT '2024-07-07'::date, NULL::int, 'a', 1, 'no id'$$) AS not_null;
SELECT count(*) AS rows_kept, 'ss_sales_0707'::regclass::oid = :p0707 AS same_oid,
       ss_identity('ss_sales_0707') = :'identity_before' AS same_identity,
       (SELECT count(*) FROM pg_class WHERE relname LIKE 'ss_sales_0707__idem%') AS staging_left
  FROM ss_sales_0707;
-- A NOT VALID foreign key of the partition's own binds new rows too.
CREATE TABLE ss_notes (note text PRIMARY KEY);
INSERT INTO ss_notes VALUES ('rolled back'), ('under a cursor'), ('by the owner');
ALTER TABLE ss_sales_0708 ADD CONSTRAINT ss_note_known FOREIGN KEY (note) REFERENCES ss_notes NOT VALID;
SELECT show_error($$SELECT * FROM idem.overwrite_partition('ss_sales', '2024-07-08'::date,
  'SELECT ''2024-07-08''::date, 1, ''a'', 1, ''unknown note''', mode => 'swap')$$) AS not_valid_foreign_key;
SELECT count(*), min(note) FROM ss_sales_0708;
-- An exclusion constraint is checked as its index is rebuilt.
CREATE TABLE ss_slots (day date NOT NULL, span int4range) PARTITION BY RANGE (day);
CREATE TABLE ss_slots_0707 PARTITION OF ss_slots FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
ALTER TABLE ss_slots_0707 ADD CONSTRAINT ss_no_overlap EXCLUDE USING gist (span WITH &&);
SELECT show_error($$SELECT * FROM idem.overwrite_partition('ss_slots', '2024-07-07'::date,
  'SELECT ''2024-07-07''::date, int4range(1, 5) UNION ALL SELECT ''2024-07-07''::date, int4range(3, 9)', mode => 'swap')$$) AS exclusion;
SELECT action FROM idem.overwrite_partition('ss_slots', '2024-07-07'::date,
  'SELECT ''2024-07-07''::date, int4range(1, 5) UNION ALL SELECT ''2024-07-07''::date, int4range(5, 9)', mode => 'swap');
SELECT span FROM ss_slots ORDER BY span;

-- In a transaction: ROLLBACK TO SAVEPOINT puts the old storage back.
BEGIN;
SAVEPOINT s;
SELECT action FROM idem.overwrite_partition('ss_sales', '2024-07-08'::date,
  $$SELECT '2024-07-08'::date, 1, 'a', 1, 'rolled back'$$, mode => 'swap');
SELECT note FROM ss_sales_0708;
ROLLBACK TO SAVEPOINT s;
SELECT count(*), min(note) FROM ss_sales_0708;
-- A cursor of this session still reading the partition: refused (55006).
DECLARE ss_cur CURSOR FOR SELECT * FROM ss_sales_0708;
FETCH 1 FROM ss_cur;
SELECT show_error($$SELECT * FROM idem.overwrite_partition('ss_sales', '2024-07-08'::date,
  'SELECT ''2024-07-08''::date, 1, ''a'', 1, ''under a cursor''', mode => 'swap')$$) AS open_cursor;
CLOSE ss_cur;
COMMIT;
SELECT count(*), min(note) FROM ss_sales_0708;

-- The caller must own the partition, not only the partitioned table.
CREATE ROLE ss_owner;
GRANT USAGE, CREATE ON SCHEMA public TO ss_owner;
GRANT REFERENCES ON ss_stores, ss_notes TO ss_owner;
ALTER TABLE ss_sales OWNER TO ss_owner;
ALTER TABLE ss_sales_0708 OWNER TO ss_owner;
SET ROLE ss_owner;
SELECT show_error($$SELECT * FROM idem.overwrite_partition('ss_sales', '2024-07-07'::date,
  'SELECT ''2024-07-07''::date, 1, ''a'', 1, ''not mine''', mode => 'swap')$$) AS not_owner;
SELECT action FROM idem.overwrite_partition('ss_sales', '2024-07-08'::date,
  $$SELECT '2024-07-08'::date, 1, 'a', 1, 'by the owner'$$, mode => 'swap');
RESET ROLE;
SELECT note FROM ss_sales_0708;

-- An unlogged partition and a temporary partitioned table: the storage
-- swapped keeps its persistence, and so do the rebuilt indexes.
CREATE TABLE ss_ulog (day date NOT NULL, id int, PRIMARY KEY (day, id)) PARTITION BY LIST (day);
CREATE UNLOGGED TABLE ss_ulog_0707 PARTITION OF ss_ulog FOR VALUES IN ('2024-07-07');
SELECT action FROM idem.overwrite_partition('ss_ulog', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, 1', mode => 'swap');
SELECT c.relname, c.relpersistence FROM pg_class c
 WHERE c.oid IN ('ss_ulog_0707'::regclass, 'ss_ulog_0707_pkey'::regclass) ORDER BY 1;
CREATE TEMP TABLE ss_tmp (day date NOT NULL, id int, PRIMARY KEY (day, id)) PARTITION BY LIST (day);
CREATE TEMP TABLE ss_tmp_0707 PARTITION OF ss_tmp FOR VALUES IN ('2024-07-07');
SELECT action FROM idem.overwrite_partition('ss_tmp', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, 2', mode => 'swap');
SELECT * FROM ss_tmp;

DROP VIEW ss_view;
DROP TABLE ss_sales, ss_stores, ss_notes, ss_slots, ss_ulog, ss_tmp;
DROP FUNCTION ss_identity(regclass), ss_try(text), ss_noop();
REVOKE USAGE, CREATE ON SCHEMA public FROM ss_owner;
DROP ROLE ss_reader, ss_owner;
