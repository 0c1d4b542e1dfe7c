WITH
src AS MATERIALIZED (SELECT CAST(s.day AS pg_catalog.date) AS day, CAST(s.store AS pg_catalog.text) AS store, CAST(s.sku AS pg_catalog.uuid) AS sku, s.qty FROM (SELECT '2024-07-07'::date AS day, 'A' AS store,
  '00000000-0000-0000-0000-000000000001'::uuid AS sku, 1 AS qty UNION ALL
  SELECT '2024-07-07', 'B', '00000000-0000-0000-0000-000000000001', 2
) AS s),
stats AS MATERIALIZED (SELECT pg_catalog.count(*) AS n, pg_catalog.count(*) FILTER (WHERE day IS NULL) AS null_0, pg_catalog.count(*) FILTER (WHERE store IS NULL) AS null_1, pg_catalog.count(*) FILTER (WHERE sku IS NULL) AS null_2, idem._repeat_hashes(src.day, src.store, src.sku) AS "idem$repeats" FROM src),
tops AS MATERIALIZED (SELECT src.day, src.store, src.sku, pg_catalog.count(*) AS "idem$n" FROM src WHERE (SELECT st."idem$repeats" IS NULL OR pg_catalog.cardinality(st."idem$repeats") OPERATOR(pg_catalog.>) 0 FROM stats st) AND idem._key_repeats((SELECT st."idem$repeats" FROM stats st), src.day, src.store, src.sku) GROUP BY src.day, src.store, src.sku HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1),
dups AS MATERIALIZED (SELECT src.day, src.store, src.sku FROM src JOIN tops ON src.day OPERATOR(pg_catalog.=) tops.day AND src.store OPERATOR(pg_catalog.=) tops.store AND src.sku OPERATOR(pg_catalog.=) tops.sku GROUP BY src.day, src.store, src.sku HAVING pg_catalog.count(DISTINCT idem._row_digest(ROW(src.day, src.store, src.sku, src.qty))) OPERATOR(pg_catalog.>) 1 LIMIT 1),
checks AS MATERIALIZED (SELECT CASE
 WHEN st.null_0 OPERATOR(pg_catalog.>) 0 THEN idem._raise('23502', pg_catalog.format('null value in key column %s of the source', pg_catalog.quote_ident('day')), pg_catalog.format('%s source %s a NULL in key column %s.', st.null_0, CASE WHEN st.null_0 OPERATOR(pg_catalog.=) 1 THEN 'row has' ELSE 'rows have' END, pg_catalog.quote_ident('day')), 'Every key column of every source row must have a value.')
 WHEN st.null_1 OPERATOR(pg_catalog.>) 0 THEN idem._raise('23502', pg_catalog.format('null value in key column %s of the source', pg_catalog.quote_ident('store')), pg_catalog.format('%s source %s a NULL in key column %s.', st.null_1, CASE WHEN st.null_1 OPERATOR(pg_catalog.=) 1 THEN 'row has' ELSE 'rows have' END, pg_catalog.quote_ident('store')), 'Every key column of every source row must have a value.')
 WHEN st.null_2 OPERATOR(pg_catalog.>) 0 THEN idem._raise('23502', pg_catalog.format('null value in key column %s of the source', pg_catalog.quote_ident('sku')), pg_catalog.format('%s source %s a NULL in key column %s.', st.null_2, CASE WHEN st.null_2 OPERATOR(pg_catalog.=) 1 THEN 'row has' ELSE 'rows have' END, pg_catalog.quote_ident('sku')), 'Every key column of every source row must have a value.')
 WHEN EXISTS (SELECT FROM dups) THEN (SELECT idem._raise('21000', 'source rows with the same key differ', pg_catalog.format('Key %s appears more than once with different values.', pg_catalog.format('(%s)=(%s)', pg_catalog.concat_ws(', ', 'day', 'store', 'sku'), pg_catalog.concat_ws(', ', COALESCE(d.day::pg_catalog.text, 'NULL'), COALESCE(d.store::pg_catalog.text, 'NULL'), COALESCE(d.sku::pg_catalog.text, 'NULL')))), 'Remove the duplicates, or pass version_column so that the newest row wins.') FROM dups d)
 ELSE true END AS ok FROM stats st),
dedup AS NOT MATERIALIZED (SELECT * FROM src WHERE (SELECT ok FROM checks) AND NOT EXISTS (SELECT FROM tops)
 UNION ALL SELECT * FROM src WHERE (SELECT ok FROM checks) AND EXISTS (SELECT FROM tops) AND NOT EXISTS (SELECT FROM tops r WHERE r.day OPERATOR(pg_catalog.=) src.day AND r.store OPERATOR(pg_catalog.=) src.store AND r.sku OPERATOR(pg_catalog.=) src.sku)
 UNION ALL (SELECT DISTINCT ON (day, store, sku) * FROM src WHERE (SELECT ok FROM checks) AND EXISTS (SELECT FROM tops) AND EXISTS (SELECT FROM tops r WHERE r.day OPERATOR(pg_catalog.=) src.day AND r.store OPERATOR(pg_catalog.=) src.store AND r.sku OPERATOR(pg_catalog.=) src.sku) ORDER BY day, store, sku)),
plan AS MATERIALIZED (SELECT * FROM (SELECT d.*, CASE
 WHEN NOT (t.day IS NOT NULL) THEN 1
 WHEN pg_catalog.record_image_eq(ROW(CAST(d.qty AS integer)), ROW(t.qty)) THEN 4
 ELSE 2 END AS "idem$action"
 FROM dedup d LEFT JOIN public.m_composite AS t ON t.day OPERATOR(pg_catalog.=) d.day AND t.store OPERATOR(pg_catalog.=) d.store AND t.sku OPERATOR(pg_catalog.=) d.sku
 OFFSET 0) AS x WHERE x."idem$action" OPERATOR(pg_catalog.<>) 4),
checks2 AS MATERIALIZED (SELECT true AS ok),
tally AS MATERIALIZED (SELECT ((SELECT st.n FROM stats st) OPERATOR(pg_catalog.-) (SELECT COALESCE(pg_catalog.sum(tp."idem$n" OPERATOR(pg_catalog.-) 1), 0)::pg_catalog.int8 FROM tops tp)) AS n, pg_catalog.count(*) AS kept, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 1) AS to_insert, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 2) AS to_update, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 3) AS to_delete, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 5) AS stale, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 7) AS absent FROM plan p),
todo AS NOT MATERIALIZED (SELECT * FROM plan p WHERE p."idem$action" OPERATOR(pg_catalog.=) ANY ('{1,2,3}'::pg_catalog.int4[]) AND (SELECT ok FROM checks2)),
ins AS (INSERT INTO public.m_composite AS t (day, store, sku, qty)
 SELECT p.day, p.store, p.sku, p.qty FROM todo p WHERE p."idem$action" OPERATOR(pg_catalog.=) 1 ORDER BY p.day, p.store, p.sku
 ON CONFLICT (day, store, sku) DO UPDATE SET (qty) = ROW(EXCLUDED.qty) WHERE NOT (pg_catalog.record_image_eq(ROW(EXCLUDED.qty), ROW(t.qty)))
 RETURNING (t.xmax OPERATOR(pg_catalog.=) '0'::pg_catalog.xid) AS fresh),
upd AS (UPDATE public.m_composite AS t SET (qty) = ROW(p.qty) FROM todo AS p WHERE p."idem$action" OPERATOR(pg_catalog.=) 2 AND t.day OPERATOR(pg_catalog.=) p.day AND t.store OPERATOR(pg_catalog.=) p.store AND t.sku OPERATOR(pg_catalog.=) p.sku RETURNING 1),
del AS (SELECT 1 WHERE false),
miss AS (SELECT 1 WHERE false),
tomb AS (SELECT 0 AS n)
SELECT (SELECT pg_catalog.count(*) FROM ins WHERE fresh)::pg_catalog.int8 AS inserted,
 ((SELECT pg_catalog.count(*) FROM upd) OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM ins WHERE NOT fresh))::pg_catalog.int8 AS updated,
 ((SELECT pg_catalog.count(*) FROM del) OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM miss))::pg_catalog.int8 AS deleted,
 (ta.n OPERATOR(pg_catalog.-) ta.kept OPERATOR(pg_catalog.+) ta.absent OPERATOR(pg_catalog.+) ta.to_insert OPERATOR(pg_catalog.-) (SELECT pg_catalog.count(*) FROM ins))::pg_catalog.int8 AS unchanged,
 (ta.stale)::pg_catalog.int8 AS stale
 FROM checks, checks2, tomb, tally ta
