WITH
src AS MATERIALIZED (SELECT CAST(s.id AS integer) AS id, s.region, s.v FROM (SELECT 1 AS id, 'eu' AS region, 1 AS v
) AS s),
stats AS MATERIALIZED (SELECT pg_catalog.count(*) AS n, pg_catalog.count(*) FILTER (WHERE id IS NULL) AS null_0, idem._repeat_hashes(src.id) AS "idem$repeats" FROM src),
tops AS MATERIALIZED (SELECT src.id, pg_catalog.count(*) AS "idem$n" FROM src WHERE (SELECT st."idem$repeats" IS NULL OR pg_catalog.cardinality(st."idem$repeats") OPERATOR(pg_catalog.>) 0 FROM stats st) AND idem._key_repeats((SELECT st."idem$repeats" FROM stats st), src.id) GROUP BY src.id HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1),
dups AS MATERIALIZED (SELECT src.id FROM src JOIN tops ON src.id OPERATOR(pg_catalog.=) tops.id GROUP BY src.id HAVING pg_catalog.count(DISTINCT idem._row_digest(ROW(src.id, src.region, src.v))) OPERATOR(pg_catalog.>) 1 LIMIT 1),
checks AS MATERIALIZED (SELECT CASE
 WHEN st.null_0 OPERATOR(pg_catalog.>) 0 THEN idem._raise('23502', pg_catalog.format('null value in key column %s of the source', pg_catalog.quote_ident('id')), pg_catalog.format('%s source %s a NULL in key column %s.', st.null_0, CASE WHEN st.null_0 OPERATOR(pg_catalog.=) 1 THEN 'row has' ELSE 'rows have' END, pg_catalog.quote_ident('id')), 'Every key column of every source row must have a value.')
 WHEN EXISTS (SELECT FROM dups) THEN (SELECT idem._raise('21000', 'source rows with the same key differ', pg_catalog.format('Key %s appears more than once with different values.', pg_catalog.format('(%s)=(%s)', pg_catalog.concat_ws(', ', 'id'), pg_catalog.concat_ws(', ', COALESCE(d.id::pg_catalog.text, 'NULL')))), 'Remove the duplicates, or pass version_column so that the newest row wins.') FROM dups d)
 WHEN st.n OPERATOR(pg_catalog.=) 0 THEN idem._raise('22023', 'the source is empty and delete_missing would delete every target row in scope', 'An empty snapshot usually means a failed extract.', 'Pass allow_empty => true if the source is really empty.')
 ELSE true END AS ok FROM stats st),
dedup AS NOT MATERIALIZED (SELECT * FROM src WHERE (SELECT ok FROM checks) AND NOT EXISTS (SELECT FROM tops)
 UNION ALL SELECT * FROM src WHERE (SELECT ok FROM checks) AND EXISTS (SELECT FROM tops) AND NOT EXISTS (SELECT FROM tops r WHERE r.id OPERATOR(pg_catalog.=) src.id)
 UNION ALL (SELECT DISTINCT ON (id) * FROM src WHERE (SELECT ok FROM checks) AND EXISTS (SELECT FROM tops) AND EXISTS (SELECT FROM tops r WHERE r.id OPERATOR(pg_catalog.=) src.id) ORDER BY id)),
plan AS MATERIALIZED (SELECT * FROM (SELECT d.*, CASE
 WHEN NOT (t.id IS NOT NULL) THEN 1
 WHEN pg_catalog.record_image_eq(ROW(CAST(d.region AS pg_catalog.text), CAST(d.v AS integer)), ROW(t.region, t.v)) THEN 4
 ELSE 2 END AS "idem$action"
 FROM dedup d LEFT JOIN public.m_snap AS t ON t.id OPERATOR(pg_catalog.=) d.id
 OFFSET 0) AS x WHERE x."idem$action" OPERATOR(pg_catalog.<>) 4),
checks2 AS MATERIALIZED (SELECT true AS ok),
tally AS MATERIALIZED (SELECT ((SELECT st.n FROM stats st) OPERATOR(pg_catalog.-) (SELECT COALESCE(pg_catalog.sum(tp."idem$n" OPERATOR(pg_catalog.-) 1), 0)::pg_catalog.int8 FROM tops tp)) AS n, pg_catalog.count(*) AS kept, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 1) AS to_insert, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 2) AS to_update, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 3) AS to_delete, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 5) AS stale, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 7) AS absent FROM plan p),
todo AS NOT MATERIALIZED (SELECT * FROM plan p WHERE p."idem$action" OPERATOR(pg_catalog.=) ANY ('{1,2,3}'::pg_catalog.int4[]) AND (SELECT ok FROM checks2)),
ins AS (INSERT INTO public.m_snap AS t (id, region, v)
 SELECT p.id, p.region, p.v FROM todo p WHERE p."idem$action" OPERATOR(pg_catalog.=) 1 ORDER BY p.id
 ON CONFLICT (id) DO UPDATE SET (region, v) = ROW(EXCLUDED.region, EXCLUDED.v) WHERE NOT (pg_catalog.record_image_eq(ROW(EXCLUDED.region, EXCLUDED.v), ROW(t.region, t.v)))
 RETURNING (t.xmax OPERATOR(pg_catalog.=) '0'::pg_catalog.xid) AS fresh),
upd AS (UPDATE public.m_snap AS t SET (region, v) = ROW(p.region, p.v) FROM todo AS p WHERE p."idem$action" OPERATOR(pg_catalog.=) 2 AND t.id OPERATOR(pg_catalog.=) p.id RETURNING 1),
del AS (SELECT 1 WHERE false),
miss AS (DELETE FROM public.m_snap AS t WHERE (region = 'eu'
) AND NOT EXISTS (SELECT FROM dedup d WHERE t.id OPERATOR(pg_catalog.=) d.id) AND (SELECT ok FROM checks2) RETURNING 1),
tomb AS (SELECT 0 AS n)
SELECT (SELECT pg_catalog.count(*) FROM ins WHERE fresh)::pg_catalog.int8 AS inserted,
 ((SELECT pg_catalog.count(*) FROM upd) OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM ins WHERE NOT fresh))::pg_catalog.int8 AS updated,
 ((SELECT pg_catalog.count(*) FROM del) OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM miss))::pg_catalog.int8 AS deleted,
 (ta.n OPERATOR(pg_catalog.-) ta.kept OPERATOR(pg_catalog.+) ta.absent OPERATOR(pg_catalog.+) ta.to_insert OPERATOR(pg_catalog.-) (SELECT pg_catalog.count(*) FROM ins))::pg_catalog.int8 AS unchanged,
 (ta.stale)::pg_catalog.int8 AS stale
 FROM checks, checks2, tomb, tally ta
