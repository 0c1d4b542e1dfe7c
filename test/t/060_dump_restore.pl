# pg_dump / pg_restore of a database that uses every feature keeps idem's
# state (pg_extension_config_dump): dataset versions and the current pointer,
# keys, watermarks, windows, tombstones, grants and the run history; jobs rerun after the
# restore are no-ops.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dump');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE source_db');
$node->safe_psql('source_db', q{
CREATE EXTENSION pg_idempotent;
CREATE TABLE orders (store text, amount numeric);
INSERT INTO orders VALUES ('a', 10), ('b', 20);
CREATE TABLE daily (store text PRIMARY KEY, revenue numeric, v int, deleted boolean DEFAULT false);
CREATE TABLE loaded (id int);
CREATE ROLE dump_etl;
SELECT idem.grant_usage('dump_etl', 'webhooks');
CREATE ROLE dump_gone;
SELECT idem.grant_usage('dump_gone', 'webhooks', 'keys');
DROP ROLE dump_gone;
SELECT idem.publish('public.revenue', 'SELECT store, sum(amount) AS revenue FROM orders GROUP BY store');
INSERT INTO orders VALUES ('c', 5);
SELECT idem.publish('public.revenue', 'SELECT store, sum(amount) AS revenue FROM orders GROUP BY store');
SELECT idem.rollback('public.revenue');
SELECT idem.claim('evt_1', 'webhooks');
SELECT idem.once('evt_2', 'SELECT 42 AS answer', 'webhooks');
SELECT idem.run_once('loader', 100, 'INSERT INTO loaded SELECT generate_series(1, 100)');
SELECT idem.mark_window('daily_job', '2024-07-01'::date, '2024-07-02'::date);
SELECT * FROM idem.merge_query('daily', $$SELECT 'x' AS store, 1 AS revenue, 5 AS v, true AS deleted$$,
                               version_column => 'v', delete_column => 'deleted');
CREATE TABLE sales (day date NOT NULL, store text, amount numeric) PARTITION BY RANGE (day);
CREATE TABLE sales_0707 PARTITION OF sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
SELECT * FROM idem.overwrite_partition('sales', '2024-07-07'::date,
  $$SELECT '2024-07-07'::date, store, sum(amount) FROM orders GROUP BY store$$);
});
# Fencing tokens: the largest handed out before the dump (a key leased now,
# and a lease's token handed out and then forgotten, whose row is gone).
my $lease_token = $node->safe_psql('source_db', q{SELECT idem.claim_lease('export_1', 'exports', '1 hour')});
my $forgotten_token = $node->safe_psql('source_db', q{SELECT idem.claim_lease('export_2', 'exports', '1 hour')});
$node->safe_psql('source_db', q{SELECT idem.forget('export_2', 'exports')});
cmp_ok($forgotten_token, '>', $lease_token, 'the forgotten lease had a larger token');

my $state_sql = q{
SELECT (SELECT string_agg(version || ':' || is_current || ':' || row_count || ':' || checksum, ',' ORDER BY version)
          FROM idem.versions('public.revenue'))
    || ' | ' || (SELECT string_agg(store || '=' || revenue, ',' ORDER BY store) FROM revenue)
    || ' | ' || idem.claim('evt_1', 'webhooks')::text
    || ' | ' || idem.result('evt_2', 'webhooks')::text
    || ' | ' || idem.watermark('loader')
    || ' | ' || (SELECT string_agg(lo || '-' || hi, ',') FROM idem.windows('daily_job'))
    || ' | ' || (SELECT count(*) FROM idem.tombstones WHERE target = 'daily'::regclass)
    || ' | ' || (SELECT count(*) FROM idem.usage_grants WHERE role::text = 'dump_etl')
    || ' | ' || (SELECT count(*) FROM loaded)
    || ' | ' || (SELECT string_agg(format('%s %s %s %s %s', id, function_name, target, action, counts), ',' ORDER BY id)
                   FROM idem.run_history);
};
my $before = $node->safe_psql('source_db', $state_sql);
my $last_run_before = $node->safe_psql('source_db', 'SELECT max(id) FROM idem.run_log');
like($before, qr/^1:true:2:v1:.*,2:false:3:v1:/, 'before: two versions, version 1 current after the rollback');

my $dump = $node->basedir . '/source.dump';
$node->command_ok(['pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('source_db')], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored_db');
$node->command_ok(['pg_restore', '-d', $node->connstr('restored_db'), $dump], 'pg_restore');

my $after = $node->safe_psql('restored_db', $state_sql);
is($after, $before, 'every version, the current pointer, keys, results, watermarks, windows, tombstones and grants survive');

# A dropped role's grant is not dumped: its OID, which a restore would read
# back as a number, could be another role's in the restoring cluster.
is($node->safe_psql('source_db', q{SELECT count(*) FROM idem.usage_grant_rows WHERE role::text ~ '^[0-9]+$'}),
	'1', 'before the dump: the dropped role\'s grant row is still there');
is($node->safe_psql('restored_db', q{SELECT count(*) FROM idem.usage_grant_rows WHERE role::text ~ '^[0-9]+$'}),
	'0', 'the restore has no grant of a dropped role');

# The tokens never go back: the leased key keeps its token, which still
# owns it, and the next token is larger than every one handed out before
# the dump, the forgotten key's included.
is($node->safe_psql('restored_db', q{SELECT token FROM idem.key_status('export_1', 'exports')}),
	$lease_token, 'the leased key keeps its token');
$node->safe_psql('restored_db', qq{SELECT idem.check_lease('export_1', 'exports', $lease_token)});
my $next_token = $node->safe_psql('restored_db', q{SELECT idem.claim_lease('export_3', 'exports', '1 hour')});
cmp_ok($next_token, '>', $forgotten_token, 'after the restore the next token is larger than every earlier one');

# Jobs rerun after the restore are no-ops.
my $rerun = $node->safe_psql('restored_db', q{
SELECT idem.run_once('loader', 100, 'INSERT INTO loaded SELECT generate_series(1, 100)')::text
    || ' ' || idem.publish('public.revenue', 'SELECT store, sum(amount) AS revenue FROM orders WHERE store <> ''c'' GROUP BY store')
    || ' ' || (SELECT stale FROM idem.merge_query('daily', $$SELECT 'x' AS store, 1 AS revenue, 4 AS v, false AS deleted$$,
                                                     version_column => 'v', delete_column => 'deleted'))
    || ' ' || (SELECT count(*) FROM loaded);
});
is($rerun, 'false 1 1 100', 'after restore: run_once skips, publish finds version 1, the tombstone still holds');

# The run history came along (in $state_sql above) and goes on: the reruns
# are recorded after it, with numbers after the restored ones.
like($before, qr/publish public\.revenue published .*rollback public\.revenue rolled back .*run_once loader ran .*merge_query public\.daily \w+/,
	'the history of every run before the dump');
is($node->safe_psql('restored_db', qq{
SELECT string_agg(function_name || ' ' || action, ',' ORDER BY id)
  FROM idem.run_history WHERE id > $last_run_before}),
	'run_once skipped,publish unchanged,merge_query unchanged',
	'after restore, the reruns are recorded after the restored runs');

# overwrite_partition's record of what it wrote holds the rows' xmin and
# cmin, which a restore does not keep: it is not dumped, and the rerun after
# the restore hashes the partition, finds the same rows and skips.
is($node->safe_psql('source_db', q{SELECT count(*) FROM idem.written_units WHERE relid = 'sales_0707'::regclass}),
	'1', 'before the dump: the partition written has its record');
is($node->safe_psql('restored_db', q{SELECT count(*) FROM idem.written_units}),
	'0', 'the record of written partitions is not dumped');
is($node->safe_psql('restored_db', q{
SELECT action || ' ' || row_count FROM idem.overwrite_partition('sales', '2024-07-07'::date,
  $$SELECT '2024-07-07'::date, store, sum(amount) FROM orders GROUP BY store$$)}),
	'skipped 3', 'after restore: the overwrite rerun hashes the partition and skips');
done_testing();
