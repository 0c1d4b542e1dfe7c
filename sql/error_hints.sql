-- Every error the extension's PL/pgSQL functions raise says what to do
-- (issue 26): each RAISE EXCEPTION of an installed function of schema idem
-- carries a HINT. (The C++ code's errors: test/unit/error_hints.py.)
SELECT p.oid::regprocedure AS function, m[1] AS raise_without_hint
  FROM pg_proc p
  JOIN pg_language l ON l.oid = p.prolang AND l.lanname = 'plpgsql'
  CROSS JOIN LATERAL regexp_matches(p.prosrc, '(RAISE\s+EXCEPTION[^;]*);', 'gi') AS m
 WHERE p.pronamespace = 'idem'::regnamespace
   AND m[1] !~* '\mHINT\s*='
 ORDER BY 1, 2;
-- The check finds a RAISE without a HINT when there is one.
CREATE FUNCTION idem_hintless() RETURNS void LANGUAGE plpgsql
  AS $$BEGIN RAISE EXCEPTION 'planted' USING ERRCODE = '22023'; END$$;
SELECT count(*) AS found_planted
  FROM pg_proc p CROSS JOIN LATERAL regexp_matches(p.prosrc, '(RAISE\s+EXCEPTION[^;]*);', 'gi') AS m
 WHERE p.proname = 'idem_hintless' AND m[1] !~* '\mHINT\s*=';
DROP FUNCTION idem_hintless();

-- Errors the extension's statements raise through idem._raise carry no
-- CONTEXT naming the internal function (issue 42; as PL/pgSQL it added
-- "PL/pgSQL function idem._raise(text,text,text,text) line 3 at RAISE").
\set VERBOSITY default
CREATE TABLE eh_log (id int PRIMARY KEY, v text);
CREATE TABLE eh_batch (id int, v text);
INSERT INTO eh_batch VALUES (NULL, 'no key');
SELECT * FROM idem.append('eh_log', 'eh_batch');
SELECT idem._raise('ID005', 'a message', 'a detail', 'a hint');
SELECT idem._raise('22023', 'no detail or hint', NULL, NULL);
SELECT idem._raise('bad!!', 'an invalid code is 22023', NULL, NULL);
