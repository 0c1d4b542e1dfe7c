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
