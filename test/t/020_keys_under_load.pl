# Idempotency keys under load: 8 pgbench clients replay a stream of events
# with heavy duplication (300 event ids, 4000 deliveries), one claim per
# delivery and, in a second run, batches through claim_many in random key
# order. Exactly one effect per event id, no error of any kind, no deadlock.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('load');
$node->init;
$node->append_conf('postgresql.conf', "max_connections = 30\nlog_lock_waits = on\n");
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_idempotent;
CREATE TABLE effects (event_id int, delivered_at timestamptz DEFAULT clock_timestamp());
CREATE TABLE batch_effects (event_id text);
});

$node->pgbench(
	'--no-vacuum --client=8 --jobs=2 --transactions=500',
	0,
	[qr{processed: 4000/4000}, qr{number of failed transactions: 0 }],
	[qr{^$}],
	'8 clients deliver 4000 duplicated events with idem.claim',
	{
		'001_deliver' => q{
\set id random(1, 300)
BEGIN;
INSERT INTO effects (event_id) SELECT :id WHERE idem.claim(:id::text, 'load');
COMMIT;
}
	});

my $result = $node->safe_psql('postgres', q{
SELECT count(*), count(DISTINCT event_id), (SELECT count(*) FROM idem.keys WHERE scope = 'load')
  FROM effects});
my ($effects, $distinct, $keys) = split /\|/, $result;
is($effects, $distinct, "one effect per event id ($effects effects)");
is($keys, $distinct, 'one key per effect');
cmp_ok($distinct, '>', 250, 'most of the 300 ids were delivered');

# Batches of three keys in random order from 8 clients: claim_many takes new
# keys in hash order, so overlapping batches queue instead of deadlocking.
$node->pgbench(
	'--no-vacuum --client=8 --jobs=2 --transactions=300',
	0,
	[qr{processed: 2400/2400}, qr{number of failed transactions: 0 }],
	[qr{^$}],
	'8 clients claim overlapping batches with idem.claim_many',
	{
		'002_batches' => q{
\set a random(1, 200)
\set b random(1, 200)
\set c random(1, 200)
BEGIN;
INSERT INTO batch_effects SELECT k FROM idem.claim_many(ARRAY['b' || :a, 'b' || :b, 'b' || :c], 'batch') AS k;
COMMIT;
}
	});
$result = $node->safe_psql('postgres', q{
SELECT count(*), count(DISTINCT event_id), (SELECT count(*) FROM idem.keys WHERE scope = 'batch')
  FROM batch_effects});
($effects, $distinct, $keys) = split /\|/, $result;
is($effects, $distinct, "claim_many: one effect per key ($effects effects)");
is($keys, $distinct, 'claim_many: one key per effect');

$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/deadlock detected/, 'no deadlock');
unlike($log, qr/terminated by signal|PANIC|TRAP:/, 'no crash');
done_testing();
