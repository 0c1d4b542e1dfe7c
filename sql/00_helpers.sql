-- Helpers the other regress files share (files run in name order).
-- show_error: runs SQL and returns SQLSTATE | message | DETAIL | HINT, so
-- each expected error is checked for its code as well as its words.
CREATE FUNCTION public.show_error(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; det text; hin text;
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
                          det = PG_EXCEPTION_DETAIL, hin = PG_EXCEPTION_HINT;
  RETURN st || ' | ' || msg || ' | ' || coalesce(det, '') || ' | ' || coalesce(hin, '');
END $$;
SELECT show_error('SELECT 1/0');
SELECT show_error('SELECT 1');
