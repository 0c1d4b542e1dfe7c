# Streaming replication: a pipeline runs on the primary (a merge, a keyed
# webhook, a run_once), the physical standby is promoted, the same pipeline
# reruns on the new primary: nothing is applied twice, watermarks and keys
# came across, and the tables' checksums equal one clean run's.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', q{
CREATE EXTENSION pg_idempotent;
CREATE TABLE raw_orders (order_id int, day date, amount numeric);
INSERT INTO raw_orders SELECT g, '2024-07-07', g FROM generate_series(1, 100) g;
CREATE TABLE daily (day date PRIMARY KEY, orders int, revenue numeric);
CREATE TABLE fulfilments (event_id text);
CREATE TABLE loaded (id int);
CREATE TABLE days (day date NOT NULL, n int) PARTITION BY RANGE (day);
CREATE TABLE days_0707 PARTITION OF days FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
INSERT INTO days VALUES ('2024-07-07', 1);
});
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

my $pipeline = q{
SELECT * FROM idem.merge_query('daily', $$SELECT day, count(*)::int AS orders, sum(amount) AS revenue
                                          FROM raw_orders GROUP BY day$$);
INSERT INTO fulfilments SELECT 'evt_1' WHERE idem.claim('evt_1', 'webhooks');
SELECT idem.run_once('loader', 100, 'INSERT INTO loaded SELECT generate_series(1, 100)');
};
my $checksums = q{
SELECT idem.checksum('daily') || ' ' || idem.checksum('fulfilments') || ' ' || idem.checksum('loaded')
       || ' ' || coalesce(idem.watermark('loader'), 'none')
       || ' ' || (SELECT count(*) FROM idem.key_status('evt_1', 'webhooks'));
};

$primary->safe_psql('postgres', $pipeline);
my $after_one_run = $primary->safe_psql('postgres', $checksums);
# Fencing tokens: 40 leased claims (more than the 32 values a sequence logs
# ahead at a time), the last of them the largest token handed out.
my $last_token = $primary->safe_psql('postgres', q{
SELECT max(idem.claim_lease('export_' || g, 'exports', '1 hour')) FROM generate_series(1, 40) g});
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', $checksums), $after_one_run, 'the standby has the data, the keys and the watermark');

# The run history came across, and a rerun that writes nothing runs on the
# hot standby: it records nothing there (a read-only transaction).
my $history = q{SELECT string_agg(function_name || ' ' || action, ',' ORDER BY id) FROM idem.run_history};
is($standby->safe_psql('postgres', $history), 'merge_query merged,run_once ran', 'the standby shows the primary\'s run history');
is($standby->safe_psql('postgres',
	q{SELECT action FROM idem.overwrite_partition('days', '2024-07-07'::date, 'SELECT ''2024-07-07''::date, 1')}),
	'skipped', 'a skipped overwrite_partition runs on the hot standby');
is($standby->safe_psql('postgres', $history), 'merge_query merged,run_once ran', 'and records nothing there');

# Failover: the primary goes away, the standby is promoted.
$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'promotion failed';

# The scheduler reruns the pipeline on the new primary.
my $out = $standby->safe_psql('postgres', $pipeline);
like($out, qr/^0\|0\|0\|1\|0$/m, 'the merge finds its row unchanged');
like($out, qr/^f$/m, 'run_once skips: the watermark travelled with the data');
is($standby->safe_psql('postgres', $checksums), $after_one_run,
	'after the rerun on the new primary: the same checksums as one clean run');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM fulfilments'), '1', 'the webhook fulfilled once');
# The tokens never go back: the lease keeps its token, and the new primary
# hands out larger ones only.
is($standby->safe_psql('postgres', q{SELECT token FROM idem.key_status('export_40', 'exports')}),
	$last_token, 'the last lease kept its token');
cmp_ok($standby->safe_psql('postgres', q{SELECT idem.claim_lease('export_41', 'exports', '1 hour')}),
	'>', $last_token, 'after the failover the next token is larger than every earlier one');
is($standby->safe_psql('postgres', $history),
	'merge_query merged,run_once ran,merge_query unchanged,run_once skipped',
	'the new primary goes on recording after the history it inherited');
done_testing();
