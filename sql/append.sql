-- idem.append and idem.append_query (issue 29): event logs keyed by the
-- event's own id. A replayed event is a duplicate (counted, not written),
-- an event id that comes back with other content is ID005 (or, with
-- on_conflict => 'keep_first', counted and left), and a replay writes
-- nothing: not one row of the target rewritten, locked or added.

-- append_replay(target, call): the counts and how many target rows have
-- another ctid, xmin or xmax afterwards (rewritten, locked or new).
CREATE FUNCTION append_replay(target regclass, call text)
  RETURNS TABLE(inserted bigint, duplicate bigint, conflicting bigint, rows_touched bigint)
  LANGUAGE plpgsql AS $$
DECLARE
  versions text := format('SELECT coalesce(array_agg(ctid::text || '' '' || xmin::text || '' '' || xmax::text), ''{}'') FROM %s', target);
  before text[];
  after text[];
BEGIN
  EXECUTE versions INTO before;
  EXECUTE 'SELECT * FROM (' || call || ') AS a' INTO inserted, duplicate, conflicting;
  EXECUTE versions INTO after;
  SELECT count(*) INTO rows_touched FROM unnest(after) AS v(x) WHERE NOT (v.x = ANY (before));
  RETURN NEXT;
END $$;

-- An event table with its primary key on the event id.
CREATE TABLE a_events (event_id bigint PRIMARY KEY, at timestamptz NOT NULL, kind text,
                       payload jsonb, amount numeric(10,2), received_at timestamptz);
CREATE TABLE a_batch (event_id bigint, at timestamptz, kind text, payload jsonb, amount numeric(10,2),
                      received_at timestamptz);
INSERT INTO a_batch VALUES
  (1, '2026-01-01 10:00+00', 'paid', '{"order": 7}', 10.5, '2026-01-01 10:00:01+00'),
  (2, '2026-01-01 10:05+00', 'shipped', '{"order": 7}', NULL, '2026-01-01 10:05:01+00'),
  -- delivered twice in one batch, received a second apart: one event
  (3, '2026-01-01 10:09+00', 'refund', '{"order": 8}', -3.00, '2026-01-01 10:09:01+00'),
  (3, '2026-01-01 10:09+00', 'refund', '{"order": 8}', -3.00, '2026-01-01 10:09:02+00');

-- The first run: 3 events, the repeated one collapses (a duplicate).
SELECT * FROM idem.append('a_events', 'a_batch', exclude_columns => '{received_at}');
SELECT event_id, kind, amount, received_at FROM a_events ORDER BY event_id;
-- The replay writes nothing.
SELECT * FROM append_replay('a_events', $$SELECT * FROM idem.append('a_events', 'a_batch', exclude_columns => '{received_at}')$$);
-- Without exclude_columns, the two deliveries of event 3 differ: ID005,
-- nothing written.
SELECT show_error($$SELECT * FROM idem.append('a_events', 'a_batch')$$);

-- The next batch: event 4 is new, 1 is a replay received later (same
-- content but received_at), 2 came back with another payload.
CREATE TABLE a_batch2 (LIKE a_batch);
INSERT INTO a_batch2 VALUES
  (4, '2026-01-02 08:00+00', 'paid', '{"order": 9}', 99.99, '2026-01-02 08:00:01+00'),
  (1, '2026-01-01 10:00+00', 'paid', '{"order": 7}', 10.50, '2026-01-02 08:00:02+00'),
  (2, '2026-01-01 10:05+00', 'shipped', '{"order": 70}', NULL, '2026-01-02 08:00:03+00');
SELECT show_error($$SELECT * FROM idem.append('a_events', 'a_batch2', exclude_columns => '{received_at}')$$);
SELECT count(*) AS events_after_the_error FROM a_events;
-- keep_first: event 2 stays as it was, counted as conflicting; 4 is added.
SELECT * FROM idem.append('a_events', 'a_batch2', exclude_columns => '{received_at}', on_conflict => 'keep_first');
SELECT event_id, payload, received_at FROM a_events ORDER BY event_id;
SELECT * FROM append_replay('a_events',
  $$SELECT * FROM idem.append('a_events', 'a_batch2', exclude_columns => '{received_at}', on_conflict => 'keep_first')$$);
-- "The same event" is the row image as stored (docs/row-image.md):
-- 10.5 and 10.50 into numeric(10,2) are the same; a NULL and a value differ.
SELECT * FROM idem.append_query('a_events',
  $$SELECT 1::bigint AS event_id, timestamptz '2026-01-01 10:00+00' AS at, 'paid' AS kind, '{"order": 7}'::jsonb AS payload, 10.5 AS amount$$);
SELECT show_error($$SELECT * FROM idem.append_query('a_events',
  $q$SELECT 2::bigint AS event_id, timestamptz '2026-01-01 10:05+00' AS at, 'shipped' AS kind, '{"order": 7}'::jsonb AS payload, 0 AS amount$q$)$$);

-- Every call leaves a row in the run history.
SELECT function_name, target, unit, action, counts FROM idem.run_history
 WHERE target = 'public.a_events' ORDER BY id;

-- An event log partitioned by day, without a global unique index: an event
-- id delivered again on another day must still be found. within bounds the
-- search to the days around the batch's own.
CREATE TABLE a_log (event_id bigint NOT NULL, day date NOT NULL, kind text, received_at timestamptz)
  PARTITION BY RANGE (day);
CREATE TABLE a_log_01 PARTITION OF a_log FOR VALUES FROM ('2026-01-01') TO ('2026-01-02');
CREATE TABLE a_log_02 PARTITION OF a_log FOR VALUES FROM ('2026-01-02') TO ('2026-01-03');
CREATE TABLE a_log_03 PARTITION OF a_log FOR VALUES FROM ('2026-01-03') TO ('2026-01-04');
CREATE TABLE a_log_09 PARTITION OF a_log FOR VALUES FROM ('2026-01-09') TO ('2026-01-10');
CREATE INDEX ON a_log (event_id);
SELECT * FROM idem.append_query('a_log',
  $$SELECT g::bigint AS event_id, date '2026-01-01' AS day, 'k' || g AS kind, now() AS received_at FROM generate_series(1, 5) g$$,
  key => '{event_id}', exclude_columns => '{received_at}');
-- Events 4 and 5 delivered again the next day (day is when it was received:
-- not part of the event either), 6 is new.
SELECT * FROM idem.append_query('a_log',
  $$SELECT g::bigint AS event_id, date '2026-01-02' AS day, 'k' || g AS kind, now() AS received_at FROM generate_series(4, 6) g$$,
  key => '{event_id}', exclude_columns => '{received_at,day}', within => '1 day');
-- within reads only the partitions around the batch: a replay 8 days later
-- with within => '2 days' is not found there (and is appended again: the
-- window is the caller's promise of how late a replay can come).
SELECT * FROM idem.append_query('a_log',
  $$SELECT 6::bigint AS event_id, date '2026-01-09' AS day, 'k6' AS kind, now() AS received_at$$,
  key => '{event_id}', exclude_columns => '{received_at,day}', within => '2 days');
-- Without within, the whole log is read.
SELECT * FROM idem.append_query('a_log',
  $$SELECT 5::bigint AS event_id, date '2026-01-09' AS day, 'k5' AS kind, now() AS received_at$$,
  key => '{event_id}', exclude_columns => '{received_at,day}');
SELECT event_id, day FROM a_log ORDER BY event_id, day;
-- The statement reads only the partitions in the window: this
-- transaction's scan counts per partition (pg_stat_xact_user_tables, this
-- backend's own) for a batch of 01-02 with within => '1 day' read 01-01 to
-- 01-03, never 01-09. (The backend's pending counts of earlier transactions
-- are flushed first: they would show there until then.)
CREATE TABLE a_log_batch (event_id bigint, day date, kind text, received_at timestamptz);
INSERT INTO a_log_batch VALUES (7, '2026-01-02', 'k7', now());
SELECT pg_stat_force_next_flush();
BEGIN;
SELECT * FROM idem.append('a_log', 'a_log_batch', key => '{event_id}', exclude_columns => '{received_at,day}',
                          within => '1 day');
SELECT relname, seq_scan + coalesce(idx_scan, 0) > 0 AS read FROM pg_stat_xact_user_tables
 WHERE relname LIKE 'a\_log\_0%' ORDER BY relname;
ROLLBACK;

-- A batch unique on the key (a primary key on the batch table): no NULL or
-- duplicate check, and the append is one INSERT even into the log without
-- a unique index (the batch cannot repeat a key; appends take turns).
CREATE TABLE a_log_pk_batch (event_id bigint PRIMARY KEY, day date NOT NULL, kind text, received_at timestamptz);
INSERT INTO a_log_pk_batch VALUES (7, '2026-01-02', 'k7', now()), (9, '2026-01-03', 'k9', now()),
                                  (6, '2026-01-03', 'k6', now());
SELECT * FROM idem.append('a_log', 'a_log_pk_batch', key => '{event_id}', exclude_columns => '{received_at,day}',
                          within => '1 day');
SELECT * FROM append_replay('a_log', $$SELECT * FROM idem.append('a_log', 'a_log_pk_batch', key => '{event_id}',
                            exclude_columns => '{received_at,day}', within => '1 day')$$);
UPDATE a_log_pk_batch SET kind = 'changed' WHERE event_id = 9;
SELECT show_error($$SELECT * FROM idem.append('a_log', 'a_log_pk_batch', key => '{event_id}',
                  exclude_columns => '{received_at,day}', within => '1 day')$$);
SELECT * FROM idem.append('a_log', 'a_log_pk_batch', key => '{event_id}', exclude_columns => '{received_at,day}',
                          within => '1 day', on_conflict => 'keep_first');
SELECT event_id, day, kind FROM a_log WHERE event_id IN (6, 7, 9) ORDER BY event_id, day;

-- Appends of one target without a unique index take turns; at REPEATABLE
-- READ such an append could not see what it waited for: refused.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT show_error($$SELECT * FROM idem.append('a_log', 'a_log_batch', key => '{event_id}')$$);
ROLLBACK;
-- With a unique index on the key it runs at REPEATABLE READ.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM idem.append('a_events', 'a_batch', exclude_columns => '{received_at}');
ROLLBACK;

-- Bad input: a clear error with a HINT, and nothing written.
SELECT show_error($$SELECT * FROM idem.append('a_log', 'a_log_batch')$$);  -- no primary key
SELECT show_error($$SELECT * FROM idem.append('a_events', 'a_batch', on_conflict => 'overwrite')$$);
SELECT show_error($$SELECT * FROM idem.append('a_events', 'a_batch', on_conflict => NULL)$$);
SELECT show_error($$SELECT * FROM idem.append(NULL, 'a_batch')$$);
SELECT show_error($$SELECT * FROM idem.append('a_events', 'no_such_table')$$);
SELECT show_error($$SELECT * FROM idem.append('a_events', 'a_batch', exclude_columns => '{nope}')$$);
SELECT show_error($$SELECT * FROM idem.append('a_events', 'a_batch', exclude_columns => '{event_id}')$$);
-- kind as the key: it repeats in the batch with other content.
SELECT show_error($$SELECT * FROM idem.append('a_events', 'a_batch', key => '{kind}')$$);
SELECT show_error($$SELECT * FROM idem.append('a_events', 'a_batch', within => '1 day')$$);  -- not partitioned
SELECT show_error($$SELECT * FROM idem.append_query('a_log', 'SELECT 1::bigint AS event_id, ''k'' AS kind', key => '{event_id}', within => '1 day')$$);
SELECT show_error($$SELECT * FROM idem.append_query('a_events', 'SELECT NULL::bigint AS event_id, now() AS at')$$);
SELECT show_error($$SELECT * FROM idem.append_query('a_events', 'SELECT 1::bigint AS event_id, now() AS at, 1 AS nope')$$);
SELECT show_error($$SELECT * FROM idem.append_query('a_events', 'SELECT ''x''::point AS event_id')$$);
SELECT show_error($$SELECT * FROM idem.append('a_batch', 'a_events_v')$$);
CREATE VIEW a_events_v AS SELECT * FROM a_events;
SELECT show_error($$SELECT * FROM idem.append('a_events_v', 'a_batch')$$);
SELECT count(*) AS events_still FROM a_events;

-- A caller without INSERT on the target cannot append (nor queue on it).
CREATE ROLE a_reader;
GRANT SELECT ON a_events, a_batch TO a_reader;
SET ROLE a_reader;
SELECT show_error($$SELECT * FROM idem.append('a_events', 'a_batch', exclude_columns => '{received_at}')$$);
RESET ROLE;

-- Hostile identifiers and a hostile search_path change nothing.
CREATE SCHEMA "a ""odd""; schema";
CREATE TABLE "a ""odd""; schema"."ev; DROP TABLE a_events; --" (
  "id""x" bigint PRIMARY KEY, "v; --" text);
SELECT * FROM idem.append_query('"a ""odd""; schema"."ev; DROP TABLE a_events; --"',
  $$SELECT 1::bigint AS "id""x", 'one' AS "v; --"$$);
SELECT * FROM idem.append_query('"a ""odd""; schema"."ev; DROP TABLE a_events; --"',
  $$SELECT 1::bigint AS "id""x", 'one' AS "v; --"$$);
CREATE SCHEMA a_evil;
CREATE FUNCTION a_evil.yes(bigint, bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR a_evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = a_evil.yes);
CREATE FUNCTION a_evil.count(anyelement) RETURNS bigint LANGUAGE sql AS 'SELECT 42::bigint';
CREATE FUNCTION a_evil.current_setting(text) RETURNS text LANGUAGE sql AS $$SELECT 'read committed'$$;
SET search_path = a_evil, pg_catalog, public;
SELECT * FROM idem.append_query('a_events',
  $$SELECT 5::bigint AS event_id, timestamptz '2026-01-05 00:00+00' AS at, 'paid' AS kind$$);
SELECT * FROM idem.append_query('a_log',
  $$SELECT 8::bigint AS event_id, date '2026-01-03' AS day, 'k8' AS kind$$, key => '{event_id}', within => '1 day');
RESET search_path;
SELECT event_id, kind FROM a_events ORDER BY event_id;

-- An empty target (created, or truncated, and analyzed): the one INSERT has
-- nothing to look up and joins nothing (the join was planned as a scan of
-- the empty table per event, which then read every page the INSERT added).
-- A key the batch repeats fails it, and the whole statement explains it.
CREATE TABLE a_empty (id bigint PRIMARY KEY, v text);
ANALYZE a_empty;
SELECT * FROM idem.append_query('a_empty', $$SELECT g::bigint AS id, 'v' || g AS v FROM generate_series(1, 3) g$$);
TRUNCATE a_empty;
ANALYZE a_empty;
SELECT * FROM idem.append_query('a_empty', $$SELECT 1::bigint AS id, 'a' AS v UNION ALL SELECT 1, 'a' UNION ALL SELECT 2, 'b'$$);
SELECT show_error($$SELECT * FROM idem.append_query('a_empty', 'SELECT 3::bigint AS id, ''a'' AS v UNION ALL SELECT 3, ''b''')$$);
SELECT * FROM a_empty ORDER BY id;
DROP TABLE a_empty;
