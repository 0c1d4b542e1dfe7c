# A revoke takes effect whatever snapshot the revoked role reads with
# (issue 41, part 1). 0.8.0 read idem.usage_grant_rows with the caller's
# transaction snapshot and cached the answer across transactions: a
# REPEATABLE READ or SERIALIZABLE transaction begun before a revoke (or a
# snapshot exported before it and imported later) saw the old grant, and
# "allowed" stayed cached for the rest of the session. Here, for keys,
# checkpoints and datasets, at every isolation level and with an imported
# snapshot, the revoked role is refused inside that transaction once it has
# seen the revoke's invalidation, and in every later one; a role dropped
# while its session is open is refused too.
#
# Several sessions at once, over DBD::Pg (one connection each, statements
# interleaved by this script: no timing involved).
use strict;
use warnings;
use DBI;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('grants');
$node->init;
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_idempotent;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT CREATE ON SCHEMA public TO alice;
});

my $dsn = 'dbi:Pg:host=' . $node->host . ';port=' . $node->port . ';dbname=postgres';
sub session {
	my ($user) = @_;
	my $dbh = DBI->connect($dsn, $user, '',
		{ AutoCommit => 1, RaiseError => 0, PrintError => 0, PrintWarn => 0 })
	  or die "connect as $user: $DBI::errstr";
	$dbh->do('SET client_min_messages = error');
	return $dbh;
}
# run(dbh, sql): the SQLSTATE of the statement ('00000' when it succeeded).
sub run {
	my ($dbh, $sql) = @_;
	return $dbh->do($sql) ? '00000' : $dbh->state;
}
my $admin = session('postgres');
sub admin {
	my ($sql) = @_;
	$admin->do($sql) or die "$sql: " . $admin->errstr;
}

# What each kind's call is, and its grant.
my $n = 0;
my %kinds = (
	keys => {
		scope => 'payments',
		call  => sub { $n++; "SELECT idem.claim('k$n', 'payments')" },
	},
	checkpoints => {
		scope => 'job_a',
		call  => sub { $n++; "SELECT idem.advance('job_a', $n)" },
	},
	dataset => {
		scope => 'public.ds_a',
		call  => sub { $n++; "SELECT idem.publish('public.ds_a', 'SELECT $n AS n')" },
	},
);

for my $kind (sort keys %kinds) {
	my ($scope, $call) = @{ $kinds{$kind} }{qw(scope call)};
	for my $level ('READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE') {
		my $what = "$kind, $level";
		admin("SELECT idem.grant_usage('alice', '$scope', '$kind')");
		my $alice = session('alice');
		is(run($alice, $call->()), '00000', "$what: the granted role may (and its answer is cached)");
		$alice->do("BEGIN ISOLATION LEVEL $level");
		$alice->do('SELECT 1');    # the transaction's snapshot, from before the revoke
		admin("SELECT idem.revoke_usage('alice', '$scope', '$kind')");
		# Any new relation processes the revoke's invalidation.
		$alice->do('SELECT count(*) FROM pg_catalog.pg_class');
		is(run($alice, $call->()), '42501', "$what: refused in the transaction begun before the revoke");
		$alice->do('ROLLBACK');
		is(run($alice, $call->()), '42501', "$what: refused in the next transaction");
		is(run($alice, $call->()), '42501', "$what: and in the one after");
		$alice->disconnect;
	}

	# A snapshot exported before the revoke, imported after it and after a
	# later, unrelated grant change (which empties every cache again).
	admin("SELECT idem.grant_usage('alice', '$scope', '$kind')");
	my $exporter = session('alice');
	$exporter->do('BEGIN ISOLATION LEVEL REPEATABLE READ');
	my ($snapshot) = $exporter->selectrow_array('SELECT pg_export_snapshot()');
	admin("SELECT idem.revoke_usage('alice', '$scope', '$kind')");
	admin("SELECT idem.grant_usage('bob', 'unrelated', 'keys')");
	admin("SELECT idem.revoke_usage('bob', 'unrelated', 'keys')");
	my $alice = session('alice');
	for my $round (1, 2) {
		$alice->do('BEGIN ISOLATION LEVEL REPEATABLE READ');
		is(run($alice, "SET TRANSACTION SNAPSHOT '$snapshot'"), '00000', "$kind: snapshot imported ($round)");
		is(run($alice, $call->()), '42501', "$kind: refused under a snapshot exported before the revoke ($round)");
		$alice->do('ROLLBACK');
	}
	is(run($alice, $call->()), '42501', "$kind: refused in a later transaction of that session");
	$exporter->do('ROLLBACK');
	$exporter->disconnect;
	$alice->disconnect;
}

# A role dropped while its session is open: its grant rows stay (purged at
# the next grant change), and pg_has_role() of one OID with itself is true
# even for a role that is gone.
admin("SELECT idem.grant_usage('bob', 'payments', 'keys')");
admin("SELECT idem.grant_usage('bob', 'job_b', 'checkpoints')");
my $bob = session('bob');
is(run($bob, "SELECT idem.claim('b1', 'payments')"), '00000', 'bob claims');
is(run($bob, "SELECT idem.advance('job_b', 1)"), '00000', 'bob advances his checkpoint');
admin('DROP ROLE bob');
is(run($bob, "SELECT idem.claim('b2', 'payments')"), '42501', "a dropped role's session is refused keys");
like($bob->errstr, qr/has been dropped/, 'the error says the role was dropped');
is(run($bob, "SELECT idem.advance('job_b', 2)"), '42501', "and checkpoints");
is($admin->selectrow_array("SELECT count(*) FROM idem.keys WHERE key = 'b2'"), 0, 'no key was stored');
$bob->disconnect;

# A second database: grants (and the cached decisions) are per database. A
# role granted a scope in one database and primed there is refused in a
# database where it has no grant, and a revoke in the second database
# leaves the first one's grant alone.
$node->safe_psql('postgres', 'CREATE DATABASE second');
$node->safe_psql('second', 'CREATE EXTENSION pg_idempotent');
admin("SELECT idem.grant_usage('alice', 'payments', 'keys')");
my $alice1 = session('alice');
is(run($alice1, "SELECT idem.claim('d1', 'payments')"), '00000', 'alice claims in the first database');
(my $dsn2 = $dsn) =~ s/dbname=postgres/dbname=second/;
my $alice2 = DBI->connect($dsn2, 'alice', '', { AutoCommit => 1, RaiseError => 0, PrintError => 0, PrintWarn => 0 })
  or die $DBI::errstr;
is(run($alice2, "SELECT idem.claim('d1', 'payments')"), '42501', 'and is refused in the second, where she has no grant');
$node->safe_psql('second', q{SELECT idem.grant_usage('alice', 'payments', 'keys')});
is(run($alice2, "SELECT idem.claim('d2', 'payments')"), '00000', 'granted there too, she may');
$alice2->do('BEGIN ISOLATION LEVEL REPEATABLE READ');
$alice2->do('SELECT 1');
$node->safe_psql('second', q{SELECT idem.revoke_usage('alice', 'payments', 'keys')});
$alice2->do('SELECT count(*) FROM pg_catalog.pg_class');
is(run($alice2, "SELECT idem.claim('d3', 'payments')"), '42501', 'a revoke in the second database applies there');
$alice2->do('ROLLBACK');
is(run($alice1, "SELECT idem.claim('d4', 'payments')"), '00000', 'and leaves the first database\'s grant alone');
$alice1->disconnect;
$alice2->disconnect;

$admin->disconnect;
$node->stop;
done_testing();
