-- docs/reference.md's table of every public function of the extension, from
-- the catalog: its name and arguments, its result, the first sentence of its
-- COMMENT and the page that explains it. `test/docs/run.sh --write-reference`
-- writes it into the page; the docs suite fails when the page differs.
\pset format unaligned
\pset tuples_only on
WITH f AS (
  SELECT p.proname AS name,
         pg_get_function_arguments(p.oid) AS args,
         CASE WHEN p.prokind = 'p' THEN 'procedure' ELSE pg_get_function_result(p.oid) END AS result,
         regexp_replace(regexp_replace(coalesce(obj_description(p.oid, 'pg_proc'), ''), '\s+', ' ', 'g'),
                        '^(.*?\.)( .*)?$', '\1') AS summary
    FROM pg_catalog.pg_proc p
   WHERE p.pronamespace = 'idem'::regnamespace AND p.proname !~ '^_'
),
paged AS (
  SELECT f.*, CASE
    WHEN name IN ('checksum', 'checksum_query', 'diff', 'assert_rerun_safe') THEN 'rerun-testing.md'
    WHEN name IN ('merge', 'merge_query', 'purge_tombstones') THEN 'merge.md'
    WHEN name IN ('append', 'append_query') THEN 'append.md'
    WHEN name LIKE 'snapshot%' THEN 'snapshot.md'
    WHEN name IN ('overwrite_partition', 'replace_where', 'swap_partition') THEN 'overwrite.md'
    WHEN name IN ('run_once', 'advance', 'watermark', 'rewind', 'lock_job', 'mark_window', 'windows', 'gaps')
      THEN 'checkpoints.md'
    WHEN name IN ('publish', 'rollback', 'versions', 'pin', 'adopt', 'hold', 'release', 'dataset_status')
      THEN 'publish.md'
    WHEN name IN ('params') THEN 'reference.md'
    WHEN name LIKE '%effect%' THEN 'effects.md'
    WHEN name IN ('purge_history') THEN 'history.md'
    WHEN name IN ('grant_usage', 'revoke_usage', 'purge_grants') THEN 'security.md'
    ELSE 'keys.md' END AS page
  FROM f
)
SELECT '| function | arguments | returns | what it does |' UNION ALL
SELECT '|---|---|---|---|' UNION ALL
(SELECT format('| [idem.%s](%s) | `%s` | `%s` | %s |', name, page,
               replace(args, '|', '\|'), replace(result, '|', '\|'), replace(summary, '|', '\|'))
   FROM paged ORDER BY page, name, args);
