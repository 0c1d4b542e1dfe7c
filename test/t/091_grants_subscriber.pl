# A revoke replicated to a logical-replication subscriber takes effect there
# (issue 41, part 1). The grant table's invalidation trigger is a statement
# trigger, and a subscription's apply worker fires none, so in 0.8.0 a
# subscriber's session kept the decision it had cached before the revoke
# arrived, for the rest of the session. Where a subscription replicates the
# grant table, decisions now last one transaction only.
use strict;
use warnings;
use DBI;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pub = PostgreSQL::Test::Cluster->new('publisher');
$pub->init(allows_streaming => 'logical');
$pub->start;
my $sub = PostgreSQL::Test::Cluster->new('subscriber');
$sub->init;
$sub->start;

for my $node ($pub, $sub) {
	$node->safe_psql('postgres', q{
CREATE EXTENSION pg_idempotent;
CREATE ROLE carol LOGIN;
});
}
$pub->safe_psql('postgres', q{
SELECT idem.grant_usage('carol', 'payments', 'keys');
CREATE PUBLICATION grants FOR TABLE idem.usage_grant_rows;
});
my $pub_connstr = 'host=' . $pub->host . ' port=' . $pub->port . ' dbname=postgres';
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION grants CONNECTION '$pub_connstr' PUBLICATION grants");
$sub->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM idem.usage_grant_rows WHERE role = 'carol'::regrole})
  or die 'the initial sync did not copy the grant';
ok(1, 'the subscriber has the grant');

# A session of carol on the subscriber (DBD::Pg: one connection across
# the revoke), one claim per transaction, what the cache is for.
my $carol = DBI->connect('dbi:Pg:host=' . $sub->host . ';port=' . $sub->port . ';dbname=postgres', 'carol', '',
	{ AutoCommit => 1, RaiseError => 0, PrintError => 0, PrintWarn => 0 })
  or die "connect: $DBI::errstr";
sub claim {
	my ($key) = @_;
	my ($claimed) = $carol->selectrow_array("SELECT idem.claim('$key', 'payments')");
	return defined $claimed ? $claimed : 'error ' . ($carol->state // '?') . ': ' . ($carol->errstr // '');
}
is(claim('k1'), '1', 'carol claims on the subscriber');
is(claim('k2'), '1', 'and again, from the cache');

$pub->safe_psql('postgres', q{SELECT idem.revoke_usage('carol', 'payments', 'keys')});
$pub->wait_for_catchup('grants');
is($sub->safe_psql('postgres', q{SELECT count(*) FROM idem.usage_grant_rows WHERE role = 'carol'::regrole}),
	'0', 'the revoke reached the subscriber');
like(claim('k3'), qr/^error 42501: .*may not use idempotency keys in scope "payments"/,
	"carol's open session on the subscriber is refused after the replicated revoke");
is($sub->safe_psql('postgres', q{SELECT count(*) FROM idem.keys WHERE key = 'k3'}), '0', 'no key k3 was stored');

# A grant replicated later works at once, and the subscriber keeps caching
# nothing across transactions while the subscription replicates the table.
$pub->safe_psql('postgres', q{SELECT idem.grant_usage('carol', 'payments', 'keys')});
$pub->wait_for_catchup('grants');
is(claim('k4'), '1', 'a replicated grant applies to the open session at once');
$carol->disconnect;

$sub->stop;
$pub->stop;
done_testing();
