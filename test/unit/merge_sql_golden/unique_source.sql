WITH
src AS NOT MATERIALIZED (SELECT CAST(s.id AS integer) AS id, s.name FROM (SELECT id, name FROM public.m_pk_source
) AS s),
stats AS MATERIALIZED (SELECT pg_catalog.count(*) AS n FROM src),
checks AS MATERIALIZED (SELECT true AS ok),
dedup AS NOT MATERIALIZED (SELECT * FROM src WHERE (SELECT ok FROM checks)),
plan AS MATERIALIZED (SELECT * FROM (SELECT d.*, CASE
 WHEN NOT (t.id IS NOT NULL) THEN 1
 WHEN pg_catalog.record_image_eq(ROW(CAST(d.name AS pg_catalog.text)), ROW(t.name)) THEN 4
 ELSE 2 END AS "idem$action"
 FROM dedup d LEFT JOIN public.m_pk_target AS t ON t.id OPERATOR(pg_catalog.=) d.id
 OFFSET 0) AS x WHERE x."idem$action" OPERATOR(pg_catalog.<>) 4),
checks2 AS MATERIALIZED (SELECT true AS ok),
tally AS MATERIALIZED (SELECT (SELECT pg_catalog.count(*) FROM dedup) AS n, pg_catalog.count(*) AS kept, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 1) AS to_insert, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 2) AS to_update, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 3) AS to_delete, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 5) AS stale, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 7) AS absent FROM plan p),
todo AS NOT MATERIALIZED (SELECT * FROM plan p WHERE p."idem$action" OPERATOR(pg_catalog.=) ANY ('{1,2,3}'::pg_catalog.int4[]) AND (SELECT ok FROM checks2)),
ins AS (INSERT INTO public.m_pk_target AS t (id, name)
 SELECT p.id, p.name FROM todo p WHERE p."idem$action" OPERATOR(pg_catalog.=) 1 ORDER BY p.id
 ON CONFLICT (id) DO UPDATE SET (name) = ROW(EXCLUDED.name) WHERE NOT (pg_catalog.record_image_eq(ROW(EXCLUDED.name), ROW(t.name)))
 RETURNING (t.xmax OPERATOR(pg_catalog.=) '0'::pg_catalog.xid) AS fresh),
upd AS (UPDATE public.m_pk_target AS t SET (name) = ROW(p.name) FROM todo AS p WHERE p."idem$action" OPERATOR(pg_catalog.=) 2 AND t.id OPERATOR(pg_catalog.=) p.id RETURNING 1),
del AS (SELECT 1 WHERE false),
miss AS (SELECT 1 WHERE false),
tomb AS (SELECT 0 AS n)
SELECT (SELECT pg_catalog.count(*) FROM ins WHERE fresh)::pg_catalog.int8 AS inserted,
 ((SELECT pg_catalog.count(*) FROM upd) OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM ins WHERE NOT fresh))::pg_catalog.int8 AS updated,
 ((SELECT pg_catalog.count(*) FROM del) OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM miss))::pg_catalog.int8 AS deleted,
 (ta.n OPERATOR(pg_catalog.-) ta.kept OPERATOR(pg_catalog.+) ta.absent OPERATOR(pg_catalog.+) ta.to_insert OPERATOR(pg_catalog.-) (SELECT pg_catalog.count(*) FROM ins))::pg_catalog.int8 AS unchanged,
 (ta.stale)::pg_catalog.int8 AS stale
 FROM checks, checks2, tomb, tally ta
