-- Property: two rows have the same v1 image (idem._row_digest, the digest the
-- checksum sums) exactly when PostgreSQL's image comparison *= says they are
-- equal. Random rows are drawn from small pools full of values that are equal
-- (=) without being the same, so both outcomes occur often.
SELECT setseed(0.4242);

CREATE TABLE prop_pool (
  n numeric, f float8, r real, t text, j json, jb jsonb, a int[], ts timestamptz,
  iv interval, b bytea, big text);

CREATE FUNCTION pick(anyarray) RETURNS anyelement LANGUAGE sql VOLATILE AS
  'SELECT $1[1 + floor(random() * array_length($1, 1))::int]';

INSERT INTO prop_pool
SELECT pick(ARRAY[1, 1.0, 1.00, 2, NULL]::numeric[]),
       pick(ARRAY['0', '-0', 'NaN', '1', NULL]::float8[]),
       pick(ARRAY['0', '-0', '1.5', NULL]::real[]),
       pick(ARRAY['a', 'A', '', 'a ', NULL]),
       pick(ARRAY['{"a":1}', '{"a": 1}', '{"a":1}', NULL]::json[]),
       pick(ARRAY['{"a":1,"b":2}', '{"b":2, "a":1}', '[]', NULL]::jsonb[]),
       pick(ARRAY['{1,2}', '{2,1}', '{1,NULL}', '{}']::text[])::int[],
       pick(ARRAY['2024-01-01 00:00+00', '2024-01-01 01:00+01', '2024-01-02 00:00+00']::timestamptz[]),
       pick(ARRAY['1 day', '24 hours', '1 day']::interval[]),
       pick(ARRAY['\x00', '\x0000', '', NULL]::bytea[]),
       pick(ARRAY[repeat('x', 5000), repeat('x', 4999) || 'y', NULL])
  FROM generate_series(1, 300);

-- A second copy of the same rows whose long values are stored uncompressed
-- out of line: the physical form must not matter.
CREATE TABLE prop_external (LIKE prop_pool);
ALTER TABLE prop_external ALTER COLUMN big SET STORAGE EXTERNAL,
                          ALTER COLUMN t SET STORAGE EXTERNAL;
INSERT INTO prop_external SELECT * FROM prop_pool;

-- Every pair of rows, in three projections narrow enough that the same row
-- turns up often (90,000 pairs each, and again across the two storages).
CREATE VIEW prop_pairs AS
  SELECT 'numbers' AS projection,
         (idem._row_digest(x) = idem._row_digest(y)) AS same_digest, x *= y AS same_image
    FROM (SELECT n, f FROM prop_pool) x, (SELECT n, f FROM prop_pool) y
  UNION ALL
  SELECT 'real/text', idem._row_digest(x) = idem._row_digest(y), x *= y
    FROM (SELECT r, t FROM prop_pool) x, (SELECT r, t FROM prop_pool) y
  UNION ALL
  SELECT 'json/arrays', idem._row_digest(x) = idem._row_digest(y), x *= y
    FROM (SELECT j, jb, a FROM prop_pool) x, (SELECT j, jb, a FROM prop_pool) y
  UNION ALL
  SELECT 'time/bytes/toast', idem._row_digest(x) = idem._row_digest(y), x *= y
    FROM (SELECT ts, iv, b, big FROM prop_pool) x, (SELECT ts, iv, b, big FROM prop_pool) y
  UNION ALL
  SELECT 'across storages', idem._row_digest(x) = idem._row_digest(y), x *= y
    FROM (SELECT t, big FROM prop_pool) x, (SELECT t, big FROM prop_external) y;

SELECT projection, count(*) AS pairs,
       count(*) FILTER (WHERE same_digest <> same_image) AS mismatches,
       count(*) FILTER (WHERE same_image) > 1000 AS many_same,
       count(*) FILTER (WHERE NOT same_image) > 1000 AS many_different
  FROM prop_pairs GROUP BY projection ORDER BY projection;

-- Pairs that = calls equal but that are not the same must be common in the
-- pool (otherwise the property would prove nothing about the hard cases);
-- json has no =, so jsonb's stands in for it.
SELECT count(*) > 1000 AS many_equal_but_not_same
  FROM (SELECT n, f FROM prop_pool) x, (SELECT n, f FROM prop_pool) y
 WHERE (x.n, x.f) IS NOT DISTINCT FROM (y.n, y.f) AND NOT x *= y;
SELECT count(*) > 1000 AS many_json_equal_as_jsonb_but_not_same
  FROM (SELECT j FROM prop_pool) x, (SELECT j FROM prop_pool) y
 WHERE x.j::jsonb = y.j::jsonb AND NOT x *= y;

-- The table checksum is the multiset of those same digests: reordering the
-- rows keeps it, and it matches between the two storages.
SELECT idem.checksum('prop_pool') = idem.checksum('prop_external') AS same_checksum,
       idem.checksum('prop_pool') = idem.checksum_query('SELECT * FROM prop_pool ORDER BY random()') AS order_free;

-- idem._images_equal, with which merge, append and snapshot compare a source
-- row with its target row pair by pair, answers as *= on the same pairs.
SELECT projection, count(*) AS pairs,
       count(*) FILTER (WHERE same_pairs IS DISTINCT FROM same_image) AS mismatches,
       count(*) FILTER (WHERE same_pairs) > 1000 AS many_same,
       count(*) FILTER (WHERE NOT same_pairs) > 1000 AS many_different
  FROM (SELECT 'numbers' AS projection, idem._images_equal(x.n, y.n, x.f, y.f) AS same_pairs, x *= y AS same_image
          FROM (SELECT n, f FROM prop_pool) x, (SELECT n, f FROM prop_pool) y
        UNION ALL
        SELECT 'real/text', idem._images_equal(x.r, y.r, x.t, y.t), x *= y
          FROM (SELECT r, t FROM prop_pool) x, (SELECT r, t FROM prop_pool) y
        UNION ALL
        SELECT 'json/arrays', idem._images_equal(x.j, y.j, x.jb, y.jb, x.a, y.a), x *= y
          FROM (SELECT j, jb, a FROM prop_pool) x, (SELECT j, jb, a FROM prop_pool) y
        UNION ALL
        SELECT 'time/bytes/toast', idem._images_equal(x.ts, y.ts, x.iv, y.iv, x.b, y.b, x.big, y.big), x *= y
          FROM (SELECT ts, iv, b, big FROM prop_pool) x, (SELECT ts, iv, b, big FROM prop_pool) y
        UNION ALL
        SELECT 'across storages', idem._images_equal(x.t, y.t, x.big, y.big), x *= y
          FROM (SELECT t, big FROM prop_pool) x, (SELECT t, big FROM prop_external) y) p
 GROUP BY projection ORDER BY projection;

-- NULL is the same as NULL only; the arguments come in pairs of one type.
SELECT idem._images_equal(NULL::int, NULL::int) AS both_null, idem._images_equal(1, NULL::int) AS one_null,
       idem._images_equal(NULL::int, 1) AS other_null, idem._images_equal(1, 1, 'a'::text, 'a'::text) AS same;
SELECT idem._images_equal(1, 1, 2);
SELECT idem._images_equal(1, 1::bigint);
