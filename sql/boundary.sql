-- The C++/PostgreSQL boundary (docs/boundary.md): PostgreSQL errors raised
-- inside SPI while C++ objects are alive reach the client unchanged, the C++
-- objects are destroyed, and the same backend goes on working.
CREATE TABLE boundary_t (id int PRIMARY KEY, v text);
INSERT INTO boundary_t VALUES (1, 'one');

-- show_error (00_helpers) shows SQLSTATE | message | DETAIL | HINT.

-- The probe holds three C++ objects (each owning heap memory) across SPI.
SELECT idem._boundary_probe('destructed') AS before \gset

-- A unique violation deep inside SPI: 23505 with its DETAIL.
SELECT show_error($$SELECT idem._boundary_probe('run', 'INSERT INTO boundary_t VALUES (1, ''dup'')')$$);
-- An error with SQLSTATE, DETAIL and HINT of the caller's own making.
SELECT show_error($q$SELECT idem._boundary_probe('run', $x$DO $d$ BEGIN RAISE EXCEPTION 'custom failure' USING ERRCODE = '22P02', DETAIL = 'the detail', HINT = 'the hint'; END $d$$x$)$q$);
-- Every one of the six objects was destroyed although PostgreSQL longjmp'd.
SELECT idem._boundary_probe('destructed') - :before AS destroyed_after_two_errors;

-- The same backend still works, in the same session, and the failed
-- statements changed nothing.
SELECT * FROM boundary_t ORDER BY id;
SELECT idem._boundary_probe('run', 'INSERT INTO boundary_t VALUES (2, ''two'')') AS inserted;
SELECT * FROM boundary_t ORDER BY id;

-- Directly, as a client sees it (no plpgsql in between).
\set VERBOSITY default
SELECT idem._boundary_probe('run', 'INSERT INTO boundary_t VALUES (1, ''dup'')');

-- C++ exceptions become ERRORs, never a crash.
SELECT show_error($$SELECT idem._boundary_probe('throw')$$);
SELECT show_error($$SELECT idem._boundary_probe('bad_alloc')$$);
SELECT show_error($$SELECT idem._boundary_probe('user_error')$$);
SELECT show_error($$SELECT idem._boundary_probe('no such action')$$);
SELECT show_error($$SELECT idem._boundary_probe(NULL)$$);
SELECT idem._boundary_probe('destructed') - :before AS destroyed_after_cpp_errors;

-- Errors inside a subtransaction: the SPI connection the failed call left
-- open is closed by the subtransaction's abort, and the outer transaction
-- goes on using SPI through the extension.
BEGIN;
SAVEPOINT s1;
SELECT idem._boundary_probe('run', 'INSERT INTO boundary_t VALUES (1, ''dup'')');
ROLLBACK TO SAVEPOINT s1;
SELECT idem._boundary_probe('run', 'INSERT INTO boundary_t VALUES (3, ''three'')') AS inserted_after_savepoint;
SELECT idem.checksum('boundary_t') = idem.checksum_query('SELECT * FROM boundary_t') AS still_consistent;
COMMIT;
SELECT count(*) AS rows_after_commit FROM boundary_t;

-- statement_timeout cancels a long call cleanly: inside a C++ loop over SPI,
-- and inside a checksum's executor run.
-- (A cancel is not catchable by plpgsql's WHEN OTHERS, so these go direct.)
SET statement_timeout = '200ms';
SELECT idem._boundary_probe('loop', 'SELECT 1');
SELECT idem.checksum_query('SELECT pg_sleep(10)');
RESET statement_timeout;
SELECT idem._boundary_probe('destructed') - :before AS destroyed_after_cancels;
SELECT idem.checksum('boundary_t') = idem.checksum_query('TABLE boundary_t') AS works_after_cancel;

-- A caller without the privilege cannot run the probe.
CREATE ROLE boundary_nobody;
SET ROLE boundary_nobody;
SELECT show_error($$SELECT idem._boundary_probe('destructed')$$);
RESET ROLE;
DROP ROLE boundary_nobody;

-- A C++ error's text longer than the guard's buffer (4096 bytes of DETAIL)
-- is cut to whole characters: the client receives valid UTF-8. convert_from
-- validates; a cut inside an 'é' would fail with 22021 here.
DO $$
DECLARE det text;
BEGIN
  PERFORM idem.checksum_query('SELECT 1; SELECT 2 -- x' || repeat('é', 3000));
EXCEPTION WHEN invalid_parameter_value THEN
  GET STACKED DIAGNOSTICS det = PG_EXCEPTION_DETAIL;
  RAISE NOTICE 'detail of % bytes, valid UTF-8: %', octet_length(det),
    convert_from(convert_to(det, 'UTF8'), 'UTF8') = det;
END $$;
