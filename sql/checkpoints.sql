-- Checkpoints that travel with the data (api.md section 3, second block).
CREATE TABLE loaded (id bigint PRIMARY KEY, v text);
CREATE TABLE source_events (id bigint, v text);
INSERT INTO source_events SELECT g, 'e' || g FROM generate_series(1, 100) g;

-- run_once: the data and the watermark in one transaction, or neither.
SELECT idem.run_once('events', 50::bigint, 'INSERT INTO loaded SELECT * FROM source_events WHERE id <= 50') AS ran;
SELECT count(*) AS rows_loaded, idem.watermark('events') AS watermark FROM loaded;
-- A rerun for the same watermark (or an older one) does nothing.
SELECT idem.run_once('events', 50::bigint, 'INSERT INTO loaded SELECT * FROM source_events WHERE id <= 50') AS rerun;
SELECT idem.run_once('events', 40::bigint, 'INSERT INTO loaded SELECT * FROM source_events WHERE id <= 40') AS older;
SELECT count(*) AS still_50 FROM loaded;
-- A failing query moves neither the data nor the watermark.
SELECT show_error($$SELECT idem.run_once('events', 100::bigint,
  'INSERT INTO loaded SELECT * FROM source_events WHERE id > 50; SELECT 1/0')$$);
SELECT count(*) AS still_50, idem.watermark('events') AS still_at_50 FROM loaded;
-- A caller's ROLLBACK takes both back too.
BEGIN;
SELECT idem.run_once('events', 100::bigint, 'INSERT INTO loaded SELECT * FROM source_events WHERE id > 50');
ROLLBACK;
SELECT count(*) AS still_50, idem.watermark('events') AS still_at_50 FROM loaded;

-- Watermarks are typed: compared by the type's ordering, never as text.
SELECT idem.advance('numbers', 9::bigint);
SELECT idem.advance('numbers', 10::bigint);   -- as text '10' < '9'
SELECT idem.watermark('numbers') AS ten;
SELECT show_error($$SELECT idem.advance('numbers', 9::bigint)$$);
SELECT idem.advance('numbers', 10::bigint);   -- the value it holds: a no-op
SELECT show_error($$SELECT idem.advance('numbers', 11::int)$$);
SELECT show_error($$SELECT idem.advance('numbers', 11::numeric)$$);
SELECT idem.watermark('numbers', NULL::bigint) + 1 AS typed_getter;
SELECT show_error($$SELECT idem.watermark('numbers', NULL::date)$$);
SELECT idem.watermark('never_seen') IS NULL AS unknown_job_is_null,
       idem.watermark('never_seen', NULL::date) IS NULL AS unknown_job_typed_is_null;

-- numeric, date, timestamptz, text, pg_lsn.
SELECT idem.advance('n', 1.50::numeric), idem.advance('n', 1.5::numeric);   -- equal: no-op
SELECT idem.watermark('n') AS numeric_keeps_first_scale;
SELECT idem.advance('d', '2024-07-07'::date);
SELECT idem.advance('lsn', '0/16B3748'::pg_lsn), idem.advance('lsn', '1/0'::pg_lsn);
SELECT show_error($$SELECT idem.advance('lsn', 'F/0'::pg_lsn), idem.advance('lsn', '2/0'::pg_lsn)$$);
SELECT idem.advance('t', 'apple'::text), idem.advance('t', 'banana'::text);
-- The text form does not depend on session settings: ISO dates, UTC.
SET TimeZone = 'Asia/Kathmandu';
SET DateStyle = 'SQL, DMY';
SELECT idem.advance('ts', '2024-07-07 12:00:00+02'::timestamptz);
SELECT idem.watermark('ts') AS iso_utc, idem.watermark('d') AS iso_date;
SELECT idem.watermark('ts', NULL::timestamptz) = '2024-07-07 10:00:00+00'::timestamptz AS same_instant;
-- expected is read as a value of the job's type.
SELECT idem.advance('ts', '2024-07-08 00:00:00+00'::timestamptz, expected => '2024-07-07 10:00:00+00');
RESET TimeZone;
RESET DateStyle;
SELECT idem.watermark('ts') AS advanced_with_cas;

-- Compare-and-set: a stale runner is fenced out with 40001.
SELECT show_error($$SELECT idem.advance('ts', '2024-07-09 00:00+00'::timestamptz, expected => '2024-07-07 10:00:00+00')$$);
SELECT show_error($$SELECT idem.advance('brand_new', 1, expected => '0')$$);
-- ...and its data writes roll back with it.
BEGIN;
INSERT INTO loaded VALUES (1000, 'stale run');
SELECT idem.advance('ts', '2024-07-09 00:00+00'::timestamptz, expected => '2024-07-07 10:00:00+00');
ROLLBACK;
SELECT count(*) AS stale_row_gone FROM loaded WHERE id = 1000;

-- rewind: the explicit way back, recorded.
SELECT idem.rewind('numbers', 5::bigint);
SELECT idem.watermark('numbers') AS rewound;
SELECT job, action, old_value, new_value, by_role FROM idem.checkpoint_log ORDER BY id;
SELECT show_error($$SELECT idem.rewind('numbers', 'x'::text)$$);

-- lock_job returns the watermark and holds the job.
BEGIN;
SELECT idem.lock_job('numbers') AS locked_at;
SELECT locktype, mode FROM pg_locks WHERE pid = pg_backend_pid() AND relation = 'idem.checkpoints'::regclass AND mode = 'RowShareLock';
COMMIT;
SELECT idem.lock_job('fresh_job') IS NULL AS fresh_job_has_no_watermark;

-- The window ledger: a daily job backfilled out of order lists exactly the
-- missing days.
SELECT idem.mark_window('daily', '2024-07-05'::date, '2024-07-06'::date);
SELECT idem.mark_window('daily', '2024-07-01'::date, '2024-07-02'::date);
SELECT idem.mark_window('daily', '2024-07-02'::date, '2024-07-04'::date);
SELECT idem.mark_window('daily', '2024-07-02'::date, '2024-07-04'::date);   -- rerun: no duplicate
SELECT lo, hi FROM idem.windows('daily');
SELECT * FROM idem.gaps('daily', '2024-07-01'::date, '2024-07-08'::date, interval '1 day');
-- Hourly windows covering a whole day make that day done.
SELECT count(*) AS hours_marked FROM (
  SELECT idem.mark_window('hourly', ts, ts + interval '1 hour')
    FROM generate_series('2024-07-01 00:00+00'::timestamptz, '2024-07-01 23:00+00', interval '1 hour') ts) s;
SELECT * FROM idem.gaps('hourly', '2024-07-01 00:00+00'::timestamptz, '2024-07-03 00:00+00'::timestamptz, interval '1 day');
-- Numeric steps for numbers.
SELECT idem.mark_window('ids', 0::bigint, 1000::bigint), idem.mark_window('ids', 2000::bigint, 3000::bigint);
SELECT * FROM idem.gaps('ids', 0::bigint, 4000::bigint, 1000::bigint);
SELECT * FROM idem.gaps('ratios', 0.0::numeric, 1.0::numeric, 0.25::numeric);
-- Bad windows and steps.
SELECT show_error($$SELECT idem.mark_window('daily', '2024-07-09'::date, '2024-07-08'::date)$$);
SELECT show_error($$SELECT idem.mark_window('daily', 1, 2)$$);
SELECT show_error($$SELECT * FROM idem.gaps('daily', '2024-07-01'::date, '2024-07-08'::date, interval '-1 day')$$);
SELECT show_error($$SELECT * FROM idem.gaps('ids', 0::bigint, 4000::bigint, interval '1 day')$$);
SELECT show_error($$SELECT * FROM idem.gaps('daily', '2000-01-01'::date, '2900-01-01'::date, interval '1 day')$$);

-- NULLs and other bad input.
SELECT show_error($$SELECT idem.advance(NULL, 1)$$);
SELECT show_error($$SELECT idem.advance('x', NULL::int)$$);
SELECT show_error($$SELECT idem.advance('', 1)$$);
SELECT show_error($$SELECT idem.advance('x', '{"a":1}'::json)$$);
SELECT show_error($$SELECT idem.run_once('x', 1, NULL)$$);
-- lock_job's argument is wait (0.8.0, as claim's); nowait still works for
-- this release with a NOTICE; both given and contradicting is 22023; a NULL
-- is "not given".
SELECT show_error($$SELECT idem.lock_job('x', nowait => true, wait => true)$$);
SELECT idem.lock_job('numbers', nowait => false) AS with_deprecated_nowait;
SELECT idem.lock_job('numbers', wait => NULL) AS wait_null_is_default;

-- Privileges: the job is the scope for grants.
CREATE ROLE c_runner;
GRANT SELECT, INSERT ON loaded, source_events TO c_runner;
SET ROLE c_runner;
SELECT show_error($$SELECT idem.watermark('events')$$);
SELECT show_error($$SELECT * FROM idem.checkpoints$$);
RESET ROLE;
SELECT idem.grant_usage('c_runner', 'events');
SET ROLE c_runner;
SELECT idem.run_once('events', 100::bigint, 'INSERT INTO loaded SELECT * FROM source_events WHERE id > 50') AS runner_ran;
SELECT show_error($$SELECT idem.watermark('numbers')$$);
RESET ROLE;
SELECT idem.revoke_usage('c_runner', 'events');
REVOKE ALL ON loaded, source_events FROM c_runner;
DROP ROLE c_runner;
SELECT count(*) AS all_100, idem.watermark('events') AS at_100 FROM loaded;

-- A step smaller than the type can express is refused; the last window is
-- clipped to to_value.
SELECT show_error($$SELECT * FROM idem.gaps('daily', '2024-07-01'::date, '2024-07-03'::date, interval '1 hour')$$);
SELECT * FROM idem.gaps('ids', 0::bigint, 2500::bigint, 1000::bigint);

-- A type's own code (a domain's CHECK) runs as the caller who wrote the value,
-- never with the extension owner's rights and never for another reader: the
-- job keeps the domain's base type (integer), whose code no role controls.
CREATE TABLE seen_as (who name);
CREATE FUNCTION record_user(int) RETURNS boolean LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO seen_as VALUES (current_user); RETURN true; END$$;
CREATE DOMAIN watched_int AS int CHECK (record_user(VALUE));
CREATE ROLE c_domain_user;
GRANT INSERT ON seen_as TO c_domain_user;
SELECT idem.grant_usage('c_domain_user', 'domain_job', 'checkpoints');
SET ROLE c_domain_user;
SELECT idem.mark_window('domain_job', 1::watched_int, 2::watched_int);
SELECT lo, hi FROM idem.windows('domain_job');
SELECT * FROM idem.gaps('domain_job', 0::watched_int, 3::watched_int, 1::watched_int);
RESET ROLE;
SELECT value_type FROM idem.checkpoints WHERE job = 'domain_job';
TRUNCATE seen_as;
-- A superuser reads the job: nothing of c_domain_user's runs.
SELECT lo, hi FROM idem.windows('domain_job');
SELECT * FROM idem.gaps('domain_job', 0, 3, 1);
SELECT count(*) AS domain_checks_run_for_the_reader FROM seen_as;
SELECT idem.revoke_usage('c_domain_user', 'domain_job', 'checkpoints');
REVOKE ALL ON seen_as FROM c_domain_user;
DROP ROLE c_domain_user;

-- run_once's query may not end the transaction: 0A000, the watermark stays.
SELECT show_error($$SELECT idem.run_once('bad_sql_job', 1::bigint, 'ROLLBACK')$$);
SELECT idem.watermark('bad_sql_job') AS bad_sql_watermark;
-- Windows across the bigint range, or years in microseconds, stop at the
-- limit of 100000 at once instead of first building the whole series, and
-- infinite bounds, whose series never ends, are refused (the timeout turns a
-- regression into a failure instead of a hang).
SET statement_timeout = '30s';
SELECT show_error($$SELECT * FROM idem.gaps('far_job', 1::bigint, 9223372036854775807::bigint, 1::bigint)$$);
SELECT show_error($$SELECT * FROM idem.gaps('far_job', '2024-07-01'::timestamp, '2025-07-01'::timestamp, interval '1 microsecond')$$);
SELECT show_error($$SELECT * FROM idem.gaps('far_job', '2024-07-01'::date, 'infinity'::date, interval '1 day')$$);
SELECT show_error($$SELECT * FROM idem.gaps('far_job', '-infinity'::timestamptz, '-infinity'::timestamptz, interval '1 day')$$);
RESET statement_timeout;
