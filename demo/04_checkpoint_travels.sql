-- Part 4: an incremental load with a high-water mark. The checkpoint lives in
-- the same database and moves in the same transaction as the data, so "the
-- data committed but the checkpoint did not" (or the reverse) cannot happen.
\pset footer off
\set ECHO none
CREATE TABLE events_raw (id bigint, payload text);
INSERT INTO events_raw SELECT g, 'event ' || g FROM generate_series(1, 1000) g;
CREATE TABLE events_loaded (id bigint PRIMARY KEY, payload text);

\echo '== Part 4: the checkpoint travels with the data'
\echo
\echo '-- run 1 loads ids up to 500 and advances the watermark, in one transaction'
SELECT idem.run_once('events_loader', 500::bigint,
  'INSERT INTO events_loaded SELECT * FROM events_raw WHERE id <= 500') AS ran;
SELECT count(*) AS rows_loaded, idem.watermark('events_loader') AS watermark FROM events_loaded;

\echo '-- run 2 crashes half-way (the query fails after inserting rows 501..800)'
\set ON_ERROR_STOP 0
SELECT idem.run_once('events_loader', 1000::bigint,
  $$INSERT INTO events_loaded SELECT * FROM events_raw WHERE id > 500 AND id <= 800;
    SELECT 1 / 0 AS the_crash$$);
\set ON_ERROR_STOP 1
\echo '-- neither the rows nor the watermark moved: the retry starts from a clean state'
SELECT count(*) AS rows_loaded, idem.watermark('events_loader') AS watermark FROM events_loaded;

\echo '-- the retry, then a duplicate retry from an over-eager scheduler'
SELECT idem.run_once('events_loader', 1000::bigint,
  'INSERT INTO events_loaded SELECT * FROM events_raw WHERE id > 500') AS retry;
SELECT idem.run_once('events_loader', 1000::bigint,
  'INSERT INTO events_loaded SELECT * FROM events_raw WHERE id > 500') AS duplicate_retry;
SELECT count(*) AS rows_loaded, idem.watermark('events_loader') AS watermark FROM events_loaded;
\echo
