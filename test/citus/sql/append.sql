-- idem.append and idem.append_query on Citus (issues 25, 29): a distributed
-- event table keyed by the event id (its distribution column), from a
-- colocated distributed batch, a local batch with repeats and a query; a
-- replay counts duplicates and writes nothing on any shard; an event that
-- comes back with other content is ID005, or counted with keep_first. On a
-- Citus table the append is the whole statement (its counts made on the
-- coordinator), its INSERT without ON CONFLICT: appends of one target take
-- turns on the coordinator.
SET citus.shard_count = 4;
SET client_min_messages = warning;

CREATE TABLE ev (id bigint PRIMARY KEY, kind text, received_at timestamptz);
SELECT create_distributed_table('ev', 'id');
CREATE TABLE ev_batch (LIKE ev INCLUDING ALL);
SELECT create_distributed_table('ev_batch', 'id', colocate_with => 'ev');
INSERT INTO ev_batch SELECT g, 'paid', now() FROM generate_series(5, 20) g;
SELECT * FROM idem.append('ev', 'ev_batch', exclude_columns => '{received_at}');
SELECT (SELECT string_agg(result, ',' ORDER BY shardid) FROM run_command_on_shards('ev',
        'SELECT string_agg(xmin::text || ctid::text, '','' ORDER BY id) FROM %s')) AS before \gset
SELECT * FROM idem.append('ev', 'ev_batch', exclude_columns => '{received_at}');
SELECT (SELECT string_agg(result, ',' ORDER BY shardid) FROM run_command_on_shards('ev',
        'SELECT string_agg(xmin::text || ctid::text, '','' ORDER BY id) FROM %s')) = :'before' AS replay_wrote_nothing;

-- A local batch without a key: a repeated event collapses (counted as a
-- duplicate), the replayed ones are duplicates, the new ones inserted.
CREATE TABLE local_batch (id bigint, kind text, received_at timestamptz);
INSERT INTO local_batch SELECT g, 'paid', now() FROM generate_series(15, 25) g;
INSERT INTO local_batch VALUES (25, 'paid', now());
SELECT * FROM idem.append('ev', 'local_batch', exclude_columns => '{received_at}');
-- Other content under a known id: ID005, nothing written; keep_first counts it.
UPDATE local_batch SET kind = 'refunded' WHERE id = 16;
SELECT * FROM idem.append('ev', 'local_batch', exclude_columns => '{received_at}');
SELECT * FROM idem.append('ev', 'local_batch', exclude_columns => '{received_at}', on_conflict => 'keep_first');
-- Differing rows under one id within the batch: ID005 either way.
INSERT INTO local_batch VALUES (30, 'paid', now()), (30, 'shipped', now());
SELECT * FROM idem.append('ev', 'local_batch', exclude_columns => '{received_at}', on_conflict => 'keep_first');
-- NULL ids: 23502 with the count.
SELECT * FROM idem.append_query('ev', 'SELECT NULL::bigint AS id, ''paid'' AS kind, now() AS received_at');
-- From a query.
SELECT * FROM idem.append_query('ev', 'SELECT g::bigint AS id, ''paid'' AS kind, now() AS received_at FROM generate_series(24, 27) g',
                                exclude_columns => '{received_at}');
SELECT count(*) AS events, count(DISTINCT id) AS ids, count(*) FILTER (WHERE kind = 'refunded') AS refunded FROM ev;

-- A key without the distribution column is refused, naming it.
CREATE TABLE acct_ev (account int, id bigint, kind text, PRIMARY KEY (account, id));
SELECT create_distributed_table('acct_ev', 'account');
SELECT * FROM idem.append_query('acct_ev', 'SELECT 1 AS account, 1::bigint AS id, ''paid'' AS kind', key => '{id}');
SELECT * FROM idem.append_query('acct_ev', 'SELECT 1 AS account, 1::bigint AS id, ''paid'' AS kind');
SELECT * FROM idem.append_query('acct_ev', 'SELECT 1 AS account, 1::bigint AS id, ''paid'' AS kind');

-- A reference table as the target.
CREATE TABLE ref_ev (id bigint PRIMARY KEY, kind text);
SELECT create_reference_table('ref_ev');
SELECT * FROM idem.append_query('ref_ev', 'SELECT g::bigint AS id, ''paid'' AS kind FROM generate_series(1, 5) g');
SELECT * FROM idem.append_query('ref_ev', 'SELECT g::bigint AS id, ''paid'' AS kind FROM generate_series(1, 6) g');

-- The run history records each append on the coordinator.
SELECT function_name, counts->>'inserted' AS inserted, counts->>'duplicate' AS duplicate
  FROM idem.run_log WHERE target = 'public.ref_ev' ORDER BY started_at;
