WITH
src AS MATERIALIZED (SELECT CAST(s."Key ""K""" AS integer) AS "Key ""K""", s."Value Col", s."SELECT", CAST(s."v;1" AS timestamp with time zone) AS "v;1", CAST(s."Del?" AS pg_catalog.bool) AS "idem$delete" FROM (SELECT "Key ""K""", "Value Col", "SELECT", "v;1", "Del?" FROM "My Schema"."Src ""1"""
) AS s),
stats AS MATERIALIZED (SELECT pg_catalog.count(*) AS n, pg_catalog.count(*) FILTER (WHERE "Key ""K""" IS NULL) AS null_0, pg_catalog.count(*) FILTER (WHERE "v;1" IS NULL) AS null_version, idem._repeat_hashes(src."Key ""K""") AS "idem$repeats" FROM src),
tops AS MATERIALIZED (SELECT src."Key ""K""", pg_catalog.max(src."v;1") AS top, pg_catalog.count(*) AS "idem$n" FROM src WHERE (SELECT st."idem$repeats" IS NULL OR pg_catalog.cardinality(st."idem$repeats") OPERATOR(pg_catalog.>) 0 FROM stats st) AND idem._key_repeats((SELECT st."idem$repeats" FROM stats st), src."Key ""K""") GROUP BY src."Key ""K""" HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1),
dups AS MATERIALIZED (SELECT src."Key ""K""" FROM src JOIN tops ON src."Key ""K""" OPERATOR(pg_catalog.=) tops."Key ""K""" AND src."v;1" OPERATOR(pg_catalog.=) tops.top GROUP BY src."Key ""K""" HAVING pg_catalog.count(DISTINCT idem._row_digest(ROW(src."Key ""K""", src."Value Col", src."SELECT", src."v;1", src."idem$delete"))) OPERATOR(pg_catalog.>) 1 LIMIT 1),
checks AS MATERIALIZED (SELECT CASE
 WHEN st.null_0 OPERATOR(pg_catalog.>) 0 THEN idem._raise('23502', pg_catalog.format('null value in key column %s of the source', pg_catalog.quote_ident('Key "K"')), pg_catalog.format('%s source %s a NULL in key column %s.', st.null_0, CASE WHEN st.null_0 OPERATOR(pg_catalog.=) 1 THEN 'row has' ELSE 'rows have' END, pg_catalog.quote_ident('Key "K"')), 'Every key column of every source row must have a value.')
 WHEN st.null_version OPERATOR(pg_catalog.>) 0 THEN idem._raise('23502', pg_catalog.format('null value in version column %s of the source', pg_catalog.quote_ident('v;1')), pg_catalog.format('%s source rows have no version.', st.null_version), 'Every source row needs a version when version_column is given.')
 WHEN EXISTS (SELECT FROM dups) THEN (SELECT idem._raise('21000', 'source rows with the same key differ', pg_catalog.format('Key %s appears more than once with different values at its highest version.', pg_catalog.format('(%s)=(%s)', pg_catalog.concat_ws(', ', 'Key "K"'), pg_catalog.concat_ws(', ', COALESCE(d."Key ""K"""::pg_catalog.text, 'NULL')))), 'Give each change of a key a higher version.') FROM dups d)
 ELSE true END AS ok FROM stats st),
dedup AS NOT MATERIALIZED (SELECT * FROM src WHERE (SELECT ok FROM checks) AND NOT EXISTS (SELECT FROM tops)
 UNION ALL SELECT * FROM src WHERE (SELECT ok FROM checks) AND EXISTS (SELECT FROM tops) AND NOT EXISTS (SELECT FROM tops r WHERE r."Key ""K""" OPERATOR(pg_catalog.=) src."Key ""K""")
 UNION ALL (SELECT DISTINCT ON ("Key ""K""") * FROM src WHERE (SELECT ok FROM checks) AND EXISTS (SELECT FROM tops) AND EXISTS (SELECT FROM tops r WHERE r."Key ""K""" OPERATOR(pg_catalog.=) src."Key ""K""") ORDER BY "Key ""K""", "v;1" DESC)),
plan AS MATERIALIZED (SELECT * FROM (SELECT d.*, CASE
 WHEN NOT (t."Key ""K""" IS NOT NULL) AND tb.version IS NOT NULL AND d."idem$delete" IS NOT TRUE AND NOT (idem._from_canonical(tb.version, NULL::timestamp with time zone) OPERATOR(pg_catalog.<) d."v;1") THEN 5
 WHEN NOT (t."Key ""K""" IS NOT NULL) AND tb.version IS NOT NULL AND d."idem$delete" IS TRUE AND d."v;1" OPERATOR(pg_catalog.<) idem._from_canonical(tb.version, NULL::timestamp with time zone) THEN 5
 WHEN d."idem$delete" IS TRUE AND NOT (t."Key ""K""" IS NOT NULL) THEN 7
 WHEN NOT (t."Key ""K""" IS NOT NULL) THEN 1
 WHEN d."v;1" OPERATOR(pg_catalog.<) t."v;1" THEN 5
 WHEN d."idem$delete" IS TRUE THEN 3
 WHEN pg_catalog.record_image_eq(ROW(CAST(d."Value Col" AS pg_catalog.text), CAST(d."SELECT" AS integer), CAST(d."v;1" AS timestamp with time zone)), ROW(t."Value Col", t."SELECT", t."v;1")) THEN 4
 WHEN d."v;1" OPERATOR(pg_catalog.=) t."v;1" THEN 6
 ELSE 2 END AS "idem$action"
 FROM dedup d LEFT JOIN "My Schema"."Target; DROP TABLE s_target; --" AS t ON t."Key ""K""" OPERATOR(pg_catalog.=) d."Key ""K"""
 LEFT JOIN idem._tombstones_of($1::pg_catalog.regclass) AS tb ON tb.key_digest OPERATOR(pg_catalog.=) idem._row_digest(ROW(d."Key ""K"""))
 OFFSET 0) AS x WHERE x."idem$action" OPERATOR(pg_catalog.<>) 4),
checks2 AS MATERIALIZED (SELECT CASE WHEN EXISTS (SELECT FROM plan p WHERE p."idem$action" OPERATOR(pg_catalog.=) 6) THEN (SELECT idem._raise('ID006', 'a source row has the same version as the target row but different content', pg_catalog.format('Key %s has version %s in both.', pg_catalog.format('(%s)=(%s)', pg_catalog.concat_ws(', ', 'Key "K"'), pg_catalog.concat_ws(', ', COALESCE(p."Key ""K"""::pg_catalog.text, 'NULL'))), p."v;1"::pg_catalog.text), 'A changed row needs a higher version.') FROM plan p WHERE p."idem$action" OPERATOR(pg_catalog.=) 6 LIMIT 1) ELSE true END AS ok),
tally AS MATERIALIZED (SELECT ((SELECT st.n FROM stats st) OPERATOR(pg_catalog.-) (SELECT COALESCE(pg_catalog.sum(tp."idem$n" OPERATOR(pg_catalog.-) 1), 0)::pg_catalog.int8 FROM tops tp)) AS n, pg_catalog.count(*) AS kept, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 1) AS to_insert, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 2) AS to_update, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 3) AS to_delete, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 5) AS stale, pg_catalog.count(*) FILTER (WHERE p."idem$action" OPERATOR(pg_catalog.=) 7) AS absent FROM plan p),
todo AS NOT MATERIALIZED (SELECT * FROM plan p WHERE p."idem$action" OPERATOR(pg_catalog.=) ANY ('{1,2,3}'::pg_catalog.int4[]) AND (SELECT ok FROM checks2)),
ins AS (INSERT INTO "My Schema"."Target; DROP TABLE s_target; --" AS t ("Key ""K""", "Value Col", "SELECT", "v;1")
 SELECT p."Key ""K""", p."Value Col", p."SELECT", p."v;1" FROM todo p WHERE p."idem$action" OPERATOR(pg_catalog.=) 1 ORDER BY p."Key ""K"""
 ON CONFLICT ("Key ""K""") DO UPDATE SET ("Value Col", "SELECT", "v;1") = ROW(EXCLUDED."Value Col", EXCLUDED."SELECT", EXCLUDED."v;1") WHERE NOT (pg_catalog.record_image_eq(ROW(EXCLUDED."Value Col", EXCLUDED."SELECT", EXCLUDED."v;1"), ROW(t."Value Col", t."SELECT", t."v;1"))) AND NOT (EXCLUDED."v;1" OPERATOR(pg_catalog.<) t."v;1")
 RETURNING (t.xmax OPERATOR(pg_catalog.=) '0'::pg_catalog.xid) AS fresh),
upd AS (UPDATE "My Schema"."Target; DROP TABLE s_target; --" AS t SET ("Value Col", "SELECT", "v;1") = ROW(p."Value Col", p."SELECT", p."v;1") FROM todo AS p WHERE p."idem$action" OPERATOR(pg_catalog.=) 2 AND t."Key ""K""" OPERATOR(pg_catalog.=) p."Key ""K""" AND NOT (p."v;1" OPERATOR(pg_catalog.<) t."v;1") RETURNING 1),
del AS (DELETE FROM "My Schema"."Target; DROP TABLE s_target; --" AS t USING todo AS p WHERE p."idem$action" OPERATOR(pg_catalog.=) 3 AND t."Key ""K""" OPERATOR(pg_catalog.=) p."Key ""K""" AND NOT (p."v;1" OPERATOR(pg_catalog.<) t."v;1") RETURNING 1),
miss AS (SELECT 1 WHERE false),
tomb AS MATERIALIZED (SELECT idem._tombstones_put($1::pg_catalog.regclass, pg_catalog.array_agg(idem._row_digest(ROW(p."Key ""K"""))), pg_catalog.array_agg(pg_catalog.jsonb_build_array(p."Key ""K""")), pg_catalog.array_agg(idem._canonical_text(p."v;1"))) AS n FROM plan p WHERE p."idem$action" OPERATOR(pg_catalog.=) ANY ('{3,7}'::pg_catalog.int4[]) AND (SELECT ok FROM checks2))
SELECT (SELECT pg_catalog.count(*) FROM ins WHERE fresh)::pg_catalog.int8 AS inserted,
 ((SELECT pg_catalog.count(*) FROM upd) OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM ins WHERE NOT fresh))::pg_catalog.int8 AS updated,
 ((SELECT pg_catalog.count(*) FROM del) OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM miss))::pg_catalog.int8 AS deleted,
 (ta.n OPERATOR(pg_catalog.-) ta.kept OPERATOR(pg_catalog.+) ta.absent OPERATOR(pg_catalog.+) ta.to_insert OPERATOR(pg_catalog.-) (SELECT pg_catalog.count(*) FROM ins))::pg_catalog.int8 AS unchanged,
 (ta.stale OPERATOR(pg_catalog.+) ta.to_update OPERATOR(pg_catalog.-) (SELECT pg_catalog.count(*) FROM upd) OPERATOR(pg_catalog.+) ta.to_delete OPERATOR(pg_catalog.-) (SELECT pg_catalog.count(*) FROM del))::pg_catalog.int8 AS stale
 FROM checks, checks2, tomb, tally ta
