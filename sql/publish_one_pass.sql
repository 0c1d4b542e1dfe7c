-- publish reads its query as little as it can (issue 45): a version keeps a
-- sample of its rows' hashes; a publish of other content stops checking its
-- query at the first row that proves it new (a row outside the sample, or
-- one row more than the version holds), then builds and checksums the new
-- version in one pass. po_read counts the rows the query is read for.
CREATE SEQUENCE po_reads;
CREATE FUNCTION po_read(n int) RETURNS int LANGUAGE sql VOLATILE AS $$ SELECT n + 0 * nextval('po_reads')::int $$;
CREATE FUNCTION po_rows_read() RETURNS bigint LANGUAGE sql AS $$
  SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM po_reads $$;
CREATE FUNCTION po_reset() RETURNS void LANGUAGE sql AS $$ SELECT setval('po_reads', 1, false) $$;
CREATE TABLE po_src AS SELECT g AS n FROM generate_series(1, 20000) g;

-- The first version: no version to compare with, the query is read to its
-- end for its digest, then once more to build the version.
SELECT idem.publish('po_data', 'SELECT po_read(n) AS n FROM po_src') AS version, po_rows_read() AS rows_read;
SELECT version, row_count, length(row_sample) > 8 AS sampled FROM idem.dataset_versions WHERE view_name = 'po_data';
-- The same rows: read once, nothing built.
SELECT po_reset();
SELECT idem.publish('po_data', 'SELECT po_read(n) AS n FROM po_src') AS version, po_rows_read() AS rows_read;
-- Every row changed: the check stops within the first rows, the build reads
-- them all once.
UPDATE po_src SET n = -n;
SELECT po_reset();
SELECT idem.publish('po_data', 'SELECT po_read(n) AS n FROM po_src') AS version,
       po_rows_read() BETWEEN 20001 AND 20200 AS read_once_and_a_few;
-- One row more than the version: the check stops at row 20,001.
INSERT INTO po_src VALUES (0);
SELECT po_reset();
SELECT idem.publish('po_data', 'SELECT po_read(n) AS n FROM po_src ORDER BY n DESC') AS version, po_rows_read() AS rows_read;
-- What each version holds is what its checksum says.
SELECT v.version, v.row_count, v.checksum = idem.checksum(v.relation) AS checksum_right
  FROM idem.dataset_versions v WHERE v.view_name = 'po_data' ORDER BY v.version;

-- A version without a sample (published before 0.9.0), or with one that is
-- not what publish writes: the query is read to its end, as before.
UPDATE idem.dataset_versions SET row_sample = NULL WHERE view_name = 'po_data' AND version = 3;
DELETE FROM po_src WHERE n = 0;
SELECT po_reset();
SELECT idem.publish('po_data', 'SELECT po_read(n) AS n FROM po_src') AS version, po_rows_read() AS rows_read;
UPDATE idem.dataset_versions SET row_sample = '\x0300'::bytea WHERE view_name = 'po_data' AND version = 4;
UPDATE po_src SET n = n * 3;
SELECT po_reset();
SELECT idem.publish('po_data', 'SELECT po_read(n) AS n FROM po_src') AS version, po_rows_read() AS rows_read;

DROP VIEW po_data;
SELECT format('DROP TABLE %s', relation) FROM idem.dataset_versions WHERE view_name = 'po_data' \gexec
DELETE FROM idem.dataset_versions WHERE view_name = 'po_data';
DELETE FROM idem.datasets WHERE view_name = 'po_data';
DROP TABLE po_src;
DROP FUNCTION po_read(int), po_rows_read(), po_reset();
DROP SEQUENCE po_reads;
