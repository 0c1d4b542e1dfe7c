-- swap_partition and overwrite_partition(mode => 'swap'): replace a partition
-- by a fully built staging table, atomically, in the caller's transaction.

-- What a partition "is", beyond its rows: printed before and after a swap.
CREATE FUNCTION sw_props(p regclass) RETURNS TABLE(property text, value text) LANGUAGE sql AS $$
  SELECT 'name', c.relnamespace::regnamespace || '.' || c.relname FROM pg_class c WHERE c.oid = p
  UNION ALL SELECT 'bound', pg_get_expr(c.relpartbound, c.oid) FROM pg_class c WHERE c.oid = p
  UNION ALL SELECT 'owner', pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = p
  UNION ALL SELECT 'acl', c.relacl::text FROM pg_class c WHERE c.oid = p
  UNION ALL SELECT 'column acl ' || a.attname, a.attacl::text FROM pg_attribute a WHERE a.attrelid = p AND a.attacl IS NOT NULL
  UNION ALL SELECT 'comment', obj_description(p, 'pg_class')
  UNION ALL SELECT 'column comment ' || a.attname, col_description(p, a.attnum) FROM pg_attribute a
    WHERE a.attrelid = p AND a.attnum > 0 AND col_description(p, a.attnum) IS NOT NULL
  UNION ALL SELECT 'rls', c.relrowsecurity || '/' || c.relforcerowsecurity FROM pg_class c WHERE c.oid = p
  UNION ALL SELECT 'policy', polname || ' ' || polcmd::text || ' ' || pg_get_expr(polqual, polrelid) FROM pg_policy WHERE polrelid = p
  UNION ALL SELECT 'trigger', tgname || ' ' || tgenabled::text FROM pg_trigger WHERE tgrelid = p AND NOT tgisinternal
  UNION ALL SELECT 'index', i.relname || ' ' || regexp_replace(pg_get_indexdef(i.oid), '.* USING ', '')
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = p
  -- (NOT NULL constraints are rows here from 18 on: left out, as on 15.)
  UNION ALL SELECT 'constraint', conname || ' ' || contype::text || ' ' || (conparentid <> 0)::text
    FROM pg_constraint WHERE conrelid = p AND contype <> 'n'
  UNION ALL SELECT 'options', c.reloptions::text FROM pg_class c WHERE c.oid = p AND c.reloptions IS NOT NULL
  UNION ALL SELECT 'replica identity', c.relreplident::text FROM pg_class c WHERE c.oid = p
  ORDER BY 1, 2
$$;

-- A partitioned table with everything a partition can carry.
CREATE ROLE sw_owner;
CREATE ROLE sw_reader;
CREATE TABLE sw_stores (store text PRIMARY KEY);
INSERT INTO sw_stores VALUES ('a'), ('b'), ('c'), ('z');
CREATE TABLE sw_sales (day date NOT NULL, store text NOT NULL REFERENCES sw_stores, amount numeric CHECK (amount >= 0),
                       note text, PRIMARY KEY (day, store)) PARTITION BY RANGE (day);
ALTER TABLE sw_sales DROP COLUMN note;  -- a dropped column in the parent
CREATE INDEX sw_sales_store ON sw_sales (store) WHERE amount > 0;
CREATE TABLE sw_sales_0707 PARTITION OF sw_sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE sw_sales_0708 PARTITION OF sw_sales FOR VALUES FROM ('2024-07-08') TO ('2024-07-09');
CREATE TABLE sw_sales_rest PARTITION OF sw_sales DEFAULT;
INSERT INTO sw_sales VALUES ('2024-07-07', 'a', 1), ('2024-07-07', 'b', 2), ('2024-07-08', 'a', 5), ('2024-08-01', 'c', 9);
ALTER TABLE sw_sales_0707 OWNER TO sw_owner;
GRANT SELECT ON sw_sales_0707 TO sw_reader;
GRANT UPDATE (amount) ON sw_sales_0707 TO sw_reader;
COMMENT ON TABLE sw_sales_0707 IS 'sales of 7 July';
COMMENT ON COLUMN sw_sales_0707.amount IS 'in euros';
ALTER TABLE sw_sales_0707 ENABLE ROW LEVEL SECURITY;
CREATE POLICY sw_only_a ON sw_sales_0707 FOR SELECT TO sw_reader USING (store = 'a');
CREATE FUNCTION sw_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER sw_audit BEFORE UPDATE ON sw_sales_0707 FOR EACH ROW EXECUTE FUNCTION sw_touch();
CREATE TRIGGER sw_quiet BEFORE INSERT ON sw_sales_0707 FOR EACH ROW EXECUTE FUNCTION sw_touch();
ALTER TABLE sw_sales_0707 DISABLE TRIGGER sw_quiet;
ALTER TABLE sw_sales_0707 SET (fillfactor = 90, autovacuum_enabled = false);
ALTER TABLE sw_sales_0707 REPLICA IDENTITY FULL;
CREATE TABLE sw_before AS SELECT * FROM sw_props('sw_sales_0707');

-- The staging table: built with LIKE, then loaded. Its physical layout
-- differs (no dropped column), which does not matter.
CREATE TABLE sw_stage (LIKE sw_sales INCLUDING DEFAULTS);
INSERT INTO sw_stage VALUES ('2024-07-07', 'a', 10), ('2024-07-07', 'c', 3);
SELECT idem.swap_partition('sw_sales_0707', 'sw_stage') AS new_partition;
-- Everything carried over: only what must differ differs (the helper CHECK
-- is gone again, the indexes have the old names).
SELECT coalesce(a.property, b.property) AS property, b.value AS before, a.value AS after
  FROM sw_props('sw_sales_0707') a FULL JOIN sw_before b USING (property, value)
 WHERE a.property IS NULL OR b.property IS NULL ORDER BY 1, 2, 3;
SELECT count(*) AS properties_kept FROM sw_props('sw_sales_0707') a JOIN sw_before b USING (property, value);
SELECT * FROM sw_sales ORDER BY day, store;
SELECT to_regclass('sw_stage') AS staging_gone, count(*) AS tables_named_like_it
  FROM pg_class WHERE relname LIKE 'sw_sales_0707%' AND relkind = 'r';
-- The foreign key and the CHECK of the parent hold on the new partition.
SELECT show_error($$INSERT INTO sw_sales VALUES ('2024-07-07', 'nope', 1)$$);
SELECT show_error($$INSERT INTO sw_sales VALUES ('2024-07-07', 'b', -1)$$);

-- keep_old: the replaced partition stays, detached, as <name>__replaced_<n>.
CREATE TABLE sw_stage (LIKE sw_sales INCLUDING DEFAULTS);
INSERT INTO sw_stage VALUES ('2024-07-07', 'z', 7);
SELECT idem.swap_partition('sw_sales_0707', 'sw_stage', keep_old => true);
CREATE TABLE sw_stage (LIKE sw_sales INCLUDING DEFAULTS);
SELECT idem.swap_partition('sw_sales_0707', 'sw_stage', keep_old => true);
SELECT c.relname, c.relkind, c.relispartition, (SELECT count(*) FROM sw_sales_0707__replaced_1) AS rows_in_first_kept
  FROM pg_class c WHERE c.relname LIKE 'sw_sales_0707%' ORDER BY 1;
SELECT count(*) AS rows_for_0707 FROM sw_sales WHERE day = '2024-07-07';

-- ROLLBACK after a swap restores the old partition exactly.
CREATE TABLE sw_oid AS SELECT 'sw_sales_0707'::regclass::oid AS before;
BEGIN;
CREATE TABLE sw_stage (LIKE sw_sales INCLUDING DEFAULTS);
INSERT INTO sw_stage VALUES ('2024-07-07', 'b', 1);
SELECT idem.swap_partition('sw_sales_0707', 'sw_stage') IS NOT NULL AS swapped;
ROLLBACK;
SELECT 'sw_sales_0707'::regclass::oid = before AS same_partition, to_regclass('sw_stage') AS no_staging FROM sw_oid;

-- Validation, before anything is locked or written: each error names the
-- problem, and nothing changes.
CREATE TABLE sw_stage (LIKE sw_sales INCLUDING DEFAULTS);
INSERT INTO sw_stage VALUES ('2024-07-07', 'a', 1), ('2024-07-08', 'a', 1), ('2024-09-09', 'b', 2);
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'sw_stage')$$);
DELETE FROM sw_stage WHERE day <> '2024-07-07';
SELECT show_error($$SELECT idem.swap_partition(NULL, 'sw_stage')$$);
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', NULL)$$);
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'sw_stage', NULL)$$);
SELECT show_error($$SELECT idem.swap_partition('sw_stores', 'sw_stage')$$);
SELECT show_error($$SELECT idem.swap_partition('sw_sales', 'sw_stage')$$);
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'sw_sales_0707')$$);
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'sw_sales_0708')$$);
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'no_such_table')$$);
CREATE VIEW sw_view AS SELECT * FROM sw_stage;
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'sw_view')$$);
CREATE TABLE sw_unlogged (LIKE sw_sales) ;
ALTER TABLE sw_unlogged SET UNLOGGED;
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'sw_unlogged')$$);
CREATE TABLE sw_parted (LIKE sw_sales) PARTITION BY LIST (store);
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'sw_parted')$$);
CREATE TABLE sw_child () INHERITS (sw_stage);
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'sw_stage')$$);
DROP TABLE sw_child;
-- Columns: every difference is listed; the first one is the message.
CREATE TABLE sw_wrong (day timestamp NOT NULL, store varchar(10) COLLATE "C", amount numeric, extra int);
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'sw_wrong')$$);
CREATE TABLE sw_typmod (day date NOT NULL, store text NOT NULL, amount numeric(10, 2));
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'sw_typmod')$$);
-- A sub-partitioned partition.
CREATE TABLE sw_sales_0709 PARTITION OF sw_sales FOR VALUES FROM ('2024-07-09') TO ('2024-07-10') PARTITION BY LIST (store);
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0709', 'sw_stage')$$);
-- A foreign key that references the partitioned table: refused up front.
CREATE TABLE sw_events (id int, day date, store text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE sw_events_07 PARTITION OF sw_events FOR VALUES FROM ('2024-07-01') TO ('2024-08-01');
CREATE TABLE sw_event_stage (LIKE sw_events);
CREATE TABLE sw_refs (event_id int, day date, FOREIGN KEY (event_id, day) REFERENCES sw_events);
SELECT show_error($$SELECT idem.swap_partition('sw_events_07', 'sw_event_stage')$$);
-- Staging rows that break the parent's foreign key (checked while building,
-- before the parent is locked).
UPDATE sw_stage SET store = 'x';
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'sw_stage')$$);
SELECT count(*) AS rows_for_0707_unchanged FROM sw_sales WHERE day = '2024-07-07';
SELECT count(*) AS staging_untouched, (SELECT count(*) FROM pg_constraint WHERE conrelid = 'sw_stage'::regclass AND contype <> 'n') AS constraints
  FROM sw_stage;

-- A caller who does not own the tables.
CREATE ROLE sw_stranger;
GRANT USAGE ON SCHEMA public TO sw_stranger;
GRANT ALL ON sw_sales, sw_sales_0707, sw_stage TO sw_stranger;
SET ROLE sw_stranger;
SELECT show_error($$SELECT idem.swap_partition('sw_sales_0707', 'sw_stage')$$);
RESET ROLE;
REVOKE ALL ON sw_sales, sw_sales_0707, sw_stage FROM sw_stranger;
REVOKE USAGE ON SCHEMA public FROM sw_stranger;
DROP VIEW sw_view;
DROP TABLE sw_stage;

-- LIST partitions with text keys, HASH partitions with bigint keys, and a
-- two-column RANGE key over timestamptz and text.
CREATE TABLE sw_list (region text, n int) PARTITION BY LIST (region);
CREATE TABLE sw_list_eu PARTITION OF sw_list FOR VALUES IN ('de', 'fr', NULL);
CREATE TABLE sw_list_us PARTITION OF sw_list FOR VALUES IN ('us');
CREATE TABLE sw_list_stage (LIKE sw_list);
INSERT INTO sw_list_stage VALUES ('de', 1), (NULL, 2);
SELECT idem.swap_partition('sw_list_eu', 'sw_list_stage');
CREATE TABLE sw_list_stage (LIKE sw_list);
INSERT INTO sw_list_stage VALUES ('us', 3), ('fr', 4), (NULL, 5);
SELECT show_error($$SELECT idem.swap_partition('sw_list_us', 'sw_list_stage')$$);
SELECT region, n FROM sw_list ORDER BY n;
CREATE TABLE sw_hash (id bigint PRIMARY KEY, v text) PARTITION BY HASH (id);
CREATE TABLE sw_hash_0 PARTITION OF sw_hash FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE sw_hash_1 PARTITION OF sw_hash FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO sw_hash SELECT g, 'old' FROM generate_series(1, 20) g;
CREATE TABLE sw_hash_stage (LIKE sw_hash);
INSERT INTO sw_hash_stage SELECT id, 'new' FROM sw_hash_0;
SELECT idem.swap_partition('sw_hash_0', 'sw_hash_stage');
SELECT v, count(*) FROM sw_hash GROUP BY v ORDER BY v;
CREATE TABLE sw_hash_stage (LIKE sw_hash);
INSERT INTO sw_hash_stage SELECT id, 'new' FROM sw_hash_1 LIMIT 3;
INSERT INTO sw_hash_stage SELECT id, 'wrong' FROM sw_hash_0 LIMIT 2;
SELECT show_error($$SELECT idem.swap_partition('sw_hash_1', 'sw_hash_stage')$$);

-- Bounds do not depend on the session's TimeZone or DateStyle: a swap made
-- in a far time zone, with day-month dates, keeps the bound to the microsecond.
CREATE TABLE sw_events_ts (at timestamptz NOT NULL, region text NOT NULL, n int) PARTITION BY RANGE (at, region);
CREATE TABLE sw_events_ts_d7 PARTITION OF sw_events_ts
  FOR VALUES FROM ('2024-07-07 00:00:00.000001+00', 'a') TO ('2024-07-08 00:00:00+00', 'm');
CREATE TABLE sw_bound AS SELECT pg_get_expr(relpartbound, oid) AS bound FROM pg_class WHERE relname = 'sw_events_ts_d7';
SET TimeZone = 'America/St_Johns';
SET DateStyle = 'SQL, DMY';
CREATE TABLE sw_ts_stage (LIKE sw_events_ts);
INSERT INTO sw_ts_stage VALUES ('2024-07-07 00:00:00.000001+00', 'a', 1), ('2024-07-07 23:59:59+00', 'l', 2);
SELECT idem.swap_partition('sw_events_ts_d7', 'sw_ts_stage');
CREATE TABLE sw_ts_stage (LIKE sw_events_ts);
INSERT INTO sw_ts_stage VALUES ('2024-07-07 00:00:00+00', 'b', 3), ('2024-07-08 00:00:00+00', 'a', 4);
SELECT show_error($$SELECT idem.swap_partition('sw_events_ts_d7', 'sw_ts_stage')$$);
RESET TimeZone;
RESET DateStyle;
SELECT pg_get_expr(relpartbound, oid) = (SELECT bound FROM sw_bound) AS same_bound, pg_get_expr(relpartbound, oid) AS bound
  FROM pg_class WHERE relname = 'sw_events_ts_d7';

-- Generated columns: the staging table must generate them the same way.
CREATE TABLE sw_gen (id int, doubled int GENERATED ALWAYS AS (id * 2) STORED) PARTITION BY RANGE (id);
CREATE TABLE sw_gen_1 PARTITION OF sw_gen FOR VALUES FROM (0) TO (100);
CREATE TABLE sw_gen_plain (id int, doubled int);
SELECT show_error($$SELECT idem.swap_partition('sw_gen_1', 'sw_gen_plain')$$);
CREATE TABLE sw_gen_stage (LIKE sw_gen INCLUDING GENERATED);
INSERT INTO sw_gen_stage (id) VALUES (4);
SELECT idem.swap_partition('sw_gen_1', 'sw_gen_stage');
SELECT * FROM sw_gen;

-- The DEFAULT partition can be swapped too (its bound is "not any other").
CREATE TABLE sw_rest_stage (LIKE sw_sales INCLUDING DEFAULTS);
INSERT INTO sw_rest_stage VALUES ('2025-01-01', 'a', 1);
SELECT idem.swap_partition('sw_sales_rest', 'sw_rest_stage');
CREATE TABLE sw_rest_stage (LIKE sw_sales INCLUDING DEFAULTS);
INSERT INTO sw_rest_stage VALUES ('2024-07-08', 'a', 1);
SELECT show_error($$SELECT idem.swap_partition('sw_sales_rest', 'sw_rest_stage')$$);
SELECT day, store FROM sw_sales_rest;

-- Hostile names: quotes, spaces, upper case and ';' in schema, table and
-- column names; the staging table lives in another schema and is moved.
CREATE SCHEMA "Sales ""Q3"";";
CREATE TABLE "Sales ""Q3"";"."Daily; DROP TABLE sw_stores --" ("Day" date NOT NULL, "store id" text) PARTITION BY RANGE ("Day");
CREATE TABLE "Sales ""Q3"";"."July 7th" PARTITION OF "Sales ""Q3"";"."Daily; DROP TABLE sw_stores --"
  FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE INDEX "Index ON ""x""" ON "Sales ""Q3"";"."Daily; DROP TABLE sw_stores --" ("store id");
CREATE TABLE public."Stage ; x" (LIKE "Sales ""Q3"";"."Daily; DROP TABLE sw_stores --");
INSERT INTO public."Stage ; x" VALUES ('2024-07-07', 'it''s');
SELECT idem.swap_partition('"Sales ""Q3"";"."July 7th"', 'public."Stage ; x"');
SELECT * FROM "Sales ""Q3"";"."July 7th";
SELECT count(*) AS stores_still_there FROM sw_stores;

-- A hostile search_path: an operator planted ahead of pg_catalog is never
-- called by the SQL swap_partition writes.
CREATE SCHEMA sw_evil;
CREATE FUNCTION sw_evil.eq(date, date) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'planted operator called'; END $$;
CREATE OPERATOR sw_evil.= (LEFTARG = date, RIGHTARG = date, FUNCTION = sw_evil.eq);
CREATE TABLE sw_stage (LIKE sw_sales INCLUDING DEFAULTS);
INSERT INTO sw_stage VALUES ('2024-07-08', 'b', 1);
SET search_path = sw_evil, pg_catalog, public;
SELECT idem.swap_partition('sw_sales_0708', 'sw_stage');
RESET search_path;
SELECT day, store FROM sw_sales_0708;

-- From a DO block, a procedure, and under a savepoint that is rolled back.
DO $$ BEGIN
  CREATE TABLE sw_stage (LIKE sw_sales INCLUDING DEFAULTS);
  INSERT INTO sw_stage VALUES ('2024-07-08', 'c', 1);
  PERFORM idem.swap_partition('sw_sales_0708', 'sw_stage');
END $$;
CREATE PROCEDURE sw_proc() LANGUAGE plpgsql AS $$ BEGIN
  CREATE TABLE sw_stage (LIKE sw_sales INCLUDING DEFAULTS);
  INSERT INTO sw_stage VALUES ('2024-07-08', 'z', 1);
  PERFORM idem.swap_partition('sw_sales_0708', 'sw_stage');
END $$;
CALL sw_proc();
BEGIN;
SAVEPOINT s;
CREATE TABLE sw_stage (LIKE sw_sales INCLUDING DEFAULTS);
INSERT INTO sw_stage VALUES ('2024-07-08', 'a', 1);
SELECT idem.swap_partition('sw_sales_0708', 'sw_stage') IS NOT NULL AS swapped;
ROLLBACK TO SAVEPOINT s;
SELECT day, store FROM sw_sales_0708;
COMMIT;

-- overwrite_partition(mode => 'swap'): the seeds' story. The job for 7 July,
-- run once, twice and 50 times, leaves an identical partition and revenue.
CREATE TABLE sw_raw (day date, store text, amount numeric);
INSERT INTO sw_raw SELECT '2024-07-07'::date + (g % 2), (ARRAY['a','b','c'])[1 + g % 3], g FROM generate_series(1, 90) g;
CREATE FUNCTION sw_job(d date) RETURNS TABLE(action text, row_count bigint) LANGUAGE sql AS $$
  SELECT action, row_count FROM idem.overwrite_partition('sw_sales', d,
    format('SELECT day, store, sum(amount) FROM sw_raw WHERE day = %L GROUP BY 1, 2', d), mode => 'swap')
$$;
SELECT * FROM sw_job('2024-07-07');
CREATE TABLE sw_once AS SELECT idem.checksum('sw_sales_0707') AS checksum, sum(amount) AS revenue FROM sw_sales_0707;
SELECT * FROM sw_job('2024-07-07');
SELECT action, count(*) FROM (SELECT (sw_job('2024-07-07')).action FROM generate_series(1, 50)) r GROUP BY 1;
SELECT idem.checksum('sw_sales_0707') = checksum AS same_partition, sum(amount) = revenue AS same_revenue, sum(amount) AS revenue
  FROM sw_sales_0707, sw_once GROUP BY checksum, revenue;
-- Late data: swapped again; the partition keeps its properties.
INSERT INTO sw_raw VALUES ('2024-07-07', 'a', 1000);
SELECT * FROM sw_job('2024-07-07');
SELECT coalesce(a.property, b.property) AS property, b.value AS before, a.value AS after
  FROM sw_props('sw_sales_0707') a FULL JOIN sw_before b USING (property, value)
 WHERE a.property IS NULL OR b.property IS NULL ORDER BY 1, 2, 3;
-- The same run in rewrite mode finds the same rows: skipped.
SELECT * FROM idem.overwrite_partition('sw_sales', '2024-07-07'::date,
  $$SELECT day, store, sum(amount) FROM sw_raw WHERE day = '2024-07-07' GROUP BY 1, 2$$);
-- Rows outside the partition: the count, and nothing changed (no staging
-- table left behind).
SELECT show_error($$SELECT * FROM idem.overwrite_partition('sw_sales', '2024-07-07'::date,
  'SELECT day, store, sum(amount) FROM sw_raw GROUP BY 1, 2', mode => 'swap')$$);
SELECT count(*) AS no_staging_left FROM pg_class WHERE relname LIKE '%idem_staging%';
SELECT * FROM idem.overwrite_partition('sw_sales', '2024-07-07'::date,
  $$SELECT day, store, sum(amount) FROM sw_raw WHERE day = '2024-07-07' GROUP BY 1, 2$$, mode => 'swap', keep_old => true) AS unchanged;
-- A unit a foreign key references: rewrite mode works, swap mode refuses.
INSERT INTO sw_events VALUES (1, '2024-07-02', 'a');
INSERT INTO sw_refs VALUES (1, '2024-07-02');
SELECT show_error($$SELECT * FROM idem.overwrite_partition('sw_events', '2024-07-02'::date,
  'SELECT 1, ''2024-07-02''::date, ''b''', mode => 'swap')$$);
SELECT * FROM idem.overwrite_partition('sw_events', '2024-07-02'::date, $$SELECT 1, '2024-07-02'::date, 'b'$$);
SELECT * FROM sw_events;
-- replace_where keeps such references checked the same way.
CREATE TABLE sw_flat (id int PRIMARY KEY, v text);
CREATE TABLE sw_flat_refs (id int REFERENCES sw_flat);
INSERT INTO sw_flat VALUES (1, 'old'), (2, 'old');
INSERT INTO sw_flat_refs VALUES (1);
SELECT * FROM idem.replace_where('sw_flat', 'true', $$VALUES (1, 'new'), (2, 'new')$$);
SELECT show_error($$SELECT * FROM idem.replace_where('sw_flat', 'true', 'VALUES (2, ''newer'')')$$);
SELECT * FROM sw_flat ORDER BY id;

DROP OWNED BY sw_owner, sw_reader, sw_stranger;
DROP ROLE sw_owner, sw_reader, sw_stranger;

-- A swap carries the partition's own indexes and constraints (attached to
-- no parent index), every index's tablespace, and the columns' statistics
-- targets and options (issue 43): 0.8.0 dropped the partition's own
-- indexes silently and built the attached ones in the default tablespace.
-- (Debian's 15 and 17 keep an attribute version as the reserved option
-- pg_attver: not shown, it differs per table.)
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE sw_space LOCATION '';
RESET allow_in_place_tablespaces;
CREATE FUNCTION sw_layout(p regclass) RETURNS TABLE(property text, value text) LANGUAGE sql AS $$
  SELECT 'index', i.relname || ' ' || regexp_replace(pg_get_indexdef(i.oid), '.* USING ', '')
         || ' in ' || COALESCE(t.spcname, 'default')
         || CASE WHEN EXISTS (SELECT FROM pg_inherits h WHERE h.inhrelid = i.oid) THEN ' (attached)' ELSE ' (own)' END
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid LEFT JOIN pg_tablespace t ON t.oid = i.reltablespace
   WHERE x.indrelid = p
  UNION ALL SELECT 'constraint', conname || ' ' || pg_get_constraintdef(oid)
    FROM pg_constraint WHERE conrelid = p AND contype IN ('p', 'u', 'x')
  UNION ALL SELECT 'column ' || attname, 'statistics '
         || CASE WHEN attstattarget IS NULL OR attstattarget = -1 THEN 'default' ELSE attstattarget::text END
         || ', options ' || COALESCE((SELECT string_agg(o, ',') FROM unnest(attoptions) o
                                      WHERE o NOT LIKE 'pg\_attver=%'), 'none')
    FROM pg_attribute WHERE attrelid = p AND attnum > 0 AND NOT attisdropped
  UNION ALL SELECT 'statistics', stxnamespace::regnamespace || '.' || stxname || ' ' || stxkind::text || ' on '
         || pg_get_statisticsobjdef_columns(oid) || ', target '
         || CASE WHEN stxstattarget IS NULL OR stxstattarget = -1 THEN 'default' ELSE stxstattarget::text END
         || ', owner ' || CASE WHEN stxowner = (SELECT relowner FROM pg_class WHERE oid = p) THEN 'the table''s'
                               ELSE stxowner::regrole::text END || ', comment ' || COALESCE(obj_description(oid, 'pg_statistic_ext'), 'none')
    FROM pg_statistic_ext WHERE stxrelid = p
  UNION ALL SELECT 'publication', pb.pubname || COALESCE(' (' || (SELECT string_agg(attname, ', ' ORDER BY attnum)
         FROM pg_attribute WHERE attrelid = pr.prrelid AND attnum = ANY (pr.prattrs::int2[])) || ')', '')
         || COALESCE(' WHERE ' || pg_get_expr(pr.prqual, pr.prrelid), '')
    FROM pg_publication_rel pr JOIN pg_publication pb ON pb.oid = pr.prpubid WHERE pr.prrelid = p
  ORDER BY 1, 2
$$;
CREATE TABLE sw_lay (day date NOT NULL, store text NOT NULL, amount numeric, PRIMARY KEY (day, store))
  PARTITION BY RANGE (day);
CREATE INDEX sw_lay_amount ON sw_lay (amount);
CREATE TABLE sw_lay_0707 PARTITION OF sw_lay FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
ALTER INDEX sw_lay_0707_amount_idx SET TABLESPACE sw_space;
ALTER INDEX sw_lay_0707_pkey SET TABLESPACE sw_space;
CREATE INDEX sw_lay_0707_lower ON sw_lay_0707 (lower(store)) WHERE amount > 0;
CREATE INDEX sw_lay_0707_spaced ON sw_lay_0707 (store, amount) TABLESPACE sw_space;
ALTER TABLE sw_lay_0707 ADD CONSTRAINT sw_lay_0707_one_amount UNIQUE (amount) USING INDEX TABLESPACE sw_space;
ALTER TABLE sw_lay_0707 ALTER COLUMN store SET STATISTICS 500, ALTER COLUMN amount SET (n_distinct = 100);
-- Extended statistics objects (one in another schema, one on an
-- expression) and an explicit publication membership with a column list
-- and a row filter: carried too.
CREATE SCHEMA sw_stats;
CREATE ROLE sw_stats_owner;
CREATE STATISTICS sw_lay_0707_stats (ndistinct, dependencies) ON store, amount FROM sw_lay_0707;
ALTER STATISTICS sw_lay_0707_stats SET STATISTICS 300;
COMMENT ON STATISTICS sw_lay_0707_stats IS 'store and amount move together';
CREATE STATISTICS sw_stats.sw_lay_0707_lower ON (lower(store)) FROM sw_lay_0707;
ALTER STATISTICS sw_stats.sw_lay_0707_lower OWNER TO sw_stats_owner;
SET client_min_messages = error;  -- CREATE PUBLICATION warns when wal_level is below logical
CREATE PUBLICATION sw_lay_pub FOR TABLE sw_lay_0707 (day, store) WHERE (amount > 0) WITH (publish = 'insert');
RESET client_min_messages;
INSERT INTO sw_lay VALUES ('2024-07-07', 'a', 1), ('2024-07-07', 'b', 2);
CREATE TABLE sw_lay_before AS SELECT * FROM sw_layout('sw_lay_0707');
SELECT * FROM sw_lay_before;
-- overwrite_partition's swap (its own staging table): nothing differs.
SELECT action FROM idem.overwrite_partition('sw_lay', '2024-07-07'::date,
  $$SELECT '2024-07-07'::date AS day, 'c' AS store, 3 AS amount$$, mode => 'swap');
SELECT coalesce(a.property, b.property) AS property, b.value AS before, a.value AS after
  FROM sw_layout('sw_lay_0707') a FULL JOIN sw_lay_before b USING (property, value)
 WHERE a.property IS NULL OR b.property IS NULL ORDER BY 1, 2, 3;
SELECT count(*) AS layout_kept FROM sw_layout('sw_lay_0707') a JOIN sw_lay_before b USING (property, value);
-- The partition's own UNIQUE constraint holds on the new partition.
SELECT show_error($$INSERT INTO sw_lay VALUES ('2024-07-07', 'd', 3)$$);
-- swap_partition with a staging table built LIKE the parent INCLUDING ALL
-- (its copies of the parent's indexes in the default tablespace: moved),
-- and one of the partition's own indexes already built (used as it is),
-- keeping the old table: its indexes step aside under new names.
CREATE TABLE sw_lay_stage (LIKE sw_lay INCLUDING ALL);
CREATE INDEX sw_lay_stage_lower ON sw_lay_stage (lower(store)) WHERE amount > 0;
INSERT INTO sw_lay_stage VALUES ('2024-07-07', 'e', 5);
SELECT idem.swap_partition('sw_lay_0707', 'sw_lay_stage', keep_old => true) IS NOT NULL AS swapped;
SELECT coalesce(a.property, b.property) AS property, b.value AS before, a.value AS after
  FROM sw_layout('sw_lay_0707') a FULL JOIN sw_lay_before b USING (property, value)
 WHERE a.property IS NULL OR b.property IS NULL ORDER BY 1, 2, 3;
SELECT * FROM sw_layout('sw_lay_0707__replaced_1') WHERE property IN ('index', 'statistics');
SELECT * FROM sw_lay ORDER BY store;
DROP PUBLICATION sw_lay_pub;
DROP TABLE sw_lay, sw_lay_0707__replaced_1, sw_lay_before;
DROP SCHEMA sw_stats;
DROP ROLE sw_stats_owner;
DROP FUNCTION sw_layout(regclass);
DROP TABLESPACE sw_space;

-- What a swap that detaches (swap_partition, or overwrite_partition with
-- keep_old) cannot carry is refused before any work (0A000 naming it),
-- unless accept_losses => true (issue 43): 0.8.0 lost these silently.
-- Privileges another role granted, and an explicit membership in a
-- publication whose owner's privileges the caller (the tables' owner, not a
-- superuser) does not have; once it has them, the membership is carried,
-- as the extended statistics object is.
CREATE ROLE sw_owner;
CREATE ROLE sw_publisher;
CREATE ROLE sw_granter;
CREATE ROLE sw_grantee;
GRANT CREATE, USAGE ON SCHEMA public TO sw_owner;
DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO sw_publisher', current_database()); END $$;
CREATE TABLE sw_loss (day date NOT NULL, store text, amount numeric) PARTITION BY RANGE (day);
CREATE TABLE sw_loss_0707 PARTITION OF sw_loss FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
INSERT INTO sw_loss VALUES ('2024-07-07', 'a', 1);
ALTER TABLE sw_loss OWNER TO sw_owner;
ALTER TABLE sw_loss_0707 OWNER TO sw_owner;
SET client_min_messages = error;  -- CREATE PUBLICATION warns when wal_level is below logical
CREATE PUBLICATION sw_pub FOR TABLE sw_loss_0707;
RESET client_min_messages;
ALTER PUBLICATION sw_pub OWNER TO sw_publisher;
SET ROLE sw_owner;
SELECT show_error($$SELECT * FROM idem.overwrite_partition('sw_loss', '2024-07-07'::date,
  $q$SELECT '2024-07-07'::date AS day, 'b' AS store, 2 AS amount$q$, mode => 'swap', keep_old => true)$$);
-- Without keep_old, overwrite_partition's swap replaces the partition's
-- storage: the partition itself stays, and with it the membership.
SELECT action, row_count FROM idem.overwrite_partition('sw_loss', '2024-07-07'::date,
  $q$SELECT '2024-07-07'::date AS day, 'b' AS store, 2 AS amount$q$, mode => 'swap');
SELECT (SELECT string_agg(p.pubname, ', ') FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
         WHERE r.prrelid = 'sw_loss_0707'::regclass) AS publications,
       (SELECT string_agg(store, ', ') FROM sw_loss) AS stores;
GRANT SELECT ON sw_loss_0707 TO sw_granter WITH GRANT OPTION;
RESET ROLE;
GRANT USAGE ON SCHEMA public TO sw_granter;
SET ROLE sw_granter;
GRANT SELECT ON sw_loss_0707 TO sw_grantee;
SET ROLE sw_owner;
CREATE STATISTICS sw_loss_stats (ndistinct) ON store, amount FROM sw_loss_0707;
CREATE TABLE sw_loss_stage (LIKE sw_loss);
INSERT INTO sw_loss_stage VALUES ('2024-07-07', 'c', 3);
SELECT show_error($$SELECT idem.swap_partition('sw_loss_0707', 'sw_loss_stage')$$);
-- Nothing was changed, no staging table was left behind.
SELECT * FROM sw_loss ORDER BY store;
SELECT count(*) AS no_staging_left FROM pg_class WHERE relname LIKE 'sw_loss_0707__idem_staging%';
-- With sw_publisher's privileges the membership is carried; the grant by
-- sw_granter is still a loss.
RESET ROLE;
GRANT sw_publisher TO sw_owner;
SET ROLE sw_owner;
SELECT show_error($$SELECT idem.swap_partition('sw_loss_0707', 'sw_loss_stage')$$);
-- Accepted: the swap goes on without it.
SELECT idem.swap_partition('sw_loss_0707', 'sw_loss_stage', accept_losses => true) IS NOT NULL AS swapped;
SELECT * FROM sw_loss ORDER BY store;
SELECT (SELECT string_agg(p.pubname, ', ') FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
         WHERE r.prrelid = 'sw_loss_0707'::regclass) AS publications,
       (SELECT string_agg(stxname || ' ' || stxkind::text, ', ') FROM pg_statistic_ext
         WHERE stxrelid = 'sw_loss_0707'::regclass) AS statistics,
       -- The owner's own grant is left out: 17 added MAINTAIN (m) to it.
       (SELECT string_agg(a::text, ',' ORDER BY a::text) FROM pg_class c, unnest(c.relacl) a
         WHERE c.oid = 'sw_loss_0707'::regclass AND a::text NOT LIKE 'sw_owner=%') AS privileges;
-- A NULL accept_losses is an error that names it.
SELECT show_error($$SELECT idem.swap_partition('sw_loss_0707', 'sw_loss_0707', accept_losses => NULL)$$);
RESET ROLE;
DROP PUBLICATION sw_pub;
DROP TABLE sw_loss;
REVOKE USAGE ON SCHEMA public FROM sw_granter;
REVOKE CREATE, USAGE ON SCHEMA public FROM sw_owner;
DO $$ BEGIN EXECUTE format('REVOKE CREATE ON DATABASE %I FROM sw_publisher', current_database()); END $$;
DROP ROLE sw_granter, sw_grantee, sw_owner, sw_publisher;
