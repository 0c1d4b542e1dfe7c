# The outbox under crashes (issue 46): dispatchers (pg_idempotent dispatch)
# deliver 120 effects to a receiver, a database of its own that counts every
# call and applies each key once (the receiver's idempotency). Dispatcher
# workers are killed with SIGKILL before a call, after a call and before its
# report, and after reports; the postmaster is killed under load. With the
# dispatchers restarted: every effect is done, the receiver applied each key
# exactly once, a killed attempt's key was called again with the same key and
# flagged uncertain, and every done effect's answer is the last attempt's
# (no report of an older token took hold).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);

chomp(my $bindir = `pg_config --bindir`);
my $cli = "$bindir/pg_idempotent";
ok(-x $cli, 'pg_idempotent is installed by make install');

my $node = PostgreSQL::Test::Cluster->new('effects');
$node->init;
$node->append_conf('postgresql.conf', "restart_after_crash = on\n");
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_idempotent;
SELECT count(*) FROM (SELECT idem.record_effect('charge:' || g, 'charge', jsonb_build_object('order', g))
                        FROM generate_series(1, 60) g) s;
});
$node->safe_psql('postgres', 'CREATE DATABASE receiver');
$node->safe_psql('receiver', q{
CREATE TABLE calls (key text, token bigint, attempt int, uncertain boolean, at timestamptz DEFAULT clock_timestamp());
CREATE TABLE applied (key text PRIMARY KEY, token bigint);
});

# The command: the receiver's API. $dir/<mode>.<key> makes it stop for the
# test (writing its worker's pid and its own to $dir/at.<key>) before or
# after the call.
my $dir = PostgreSQL::Test::Utils::tempdir();
open my $fh, '>', "$dir/receiver.sh" or die;
print $fh <<"SH";
#!/bin/sh
payload=\$(cat)
stop() { echo "\$PPID \$\$" > "$dir/at.\$IDEM_EFFECT_KEY.tmp"; mv "$dir/at.\$IDEM_EFFECT_KEY.tmp" "$dir/at.\$IDEM_EFFECT_KEY"; exec sleep 30; }
[ -e "$dir/before.\$IDEM_EFFECT_KEY" ] && rm "$dir/before.\$IDEM_EFFECT_KEY" && stop
psql -X -q -d receiver -v ON_ERROR_STOP=1 -c "INSERT INTO calls (key, token, attempt, uncertain) VALUES ('\$IDEM_EFFECT_KEY', \$IDEM_EFFECT_TOKEN, \$IDEM_EFFECT_ATTEMPT, \$IDEM_EFFECT_UNCERTAIN = 1); INSERT INTO applied VALUES ('\$IDEM_EFFECT_KEY', \$IDEM_EFFECT_TOKEN) ON CONFLICT (key) DO NOTHING" || exit 75
[ -e "$dir/after.\$IDEM_EFFECT_KEY" ] && rm "$dir/after.\$IDEM_EFFECT_KEY" && stop
echo "{\\"token\\": \$IDEM_EFFECT_TOKEN, \\"payload\\": \$payload}"
SH
close $fh;
chmod 0755, "$dir/receiver.sh";
for my $k (qw(before.charge:5 after.charge:9 before.charge:70 after.charge:95)) {
	open my $f, '>', "$dir/$k" or die;
	close $f;
}

$ENV{PGHOST} = $node->host;
$ENV{PGPORT} = $node->port;
my @dispatchers;
# However the test ends (a failed wait dies), no dispatcher outlives it: its
# workers would go on connecting to the stopped server.
END
{
	for my $d (@dispatchers) { eval { $d->{h}->kill_kill(grace => 2); }; }
}
sub start_dispatcher
{
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ $cli, 'dispatch', '-d', 'postgres', '--kind', 'charge', '--workers', '2', '--lease', '3', '--poll', '1',
			'--', "$dir/receiver.sh" ],
		'<', \undef, '>', \$out, '2>', \$err);
	push @dispatchers, { h => $h, err => \$err };
	return $h;
}
sub done_count
{
	return $node->safe_psql('postgres', q{SELECT count(*) FROM idem.effects WHERE state = 'done'});
}
sub wait_for_file
{
	my ($f) = @_;
	for (1 .. 600) { return 1 if -e $f; usleep(50_000); }
	return 0;
}
# The processes whose parent is $pid (from /proc: procps may be missing).
sub children_of
{
	my ($pid) = @_;
	my @kids;
	for my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $in, '<', $stat or next;
		my $line = <$in> // '';
		close $in;
		push @kids, $1 if $line =~ /^(\d+) \(.*\) \S+ (\d+) / && $2 == $pid;
	}
	return @kids;
}

# Kills the worker stopped at $f and its command (which, stopped after
# its call, has made it).
sub kill_pids
{
	my ($f) = @_;
	open my $in, '<', $f or die "$f: $!";
	my ($worker, $command) = split ' ', <$in>;
	close $in;
	kill 'KILL', $worker, $command;
	unlink $f;
}

start_dispatcher() for 1 .. 2;

# Killed before its call: the worker and its command die before the
# receiver hears of charge:5; its lease runs out and another worker calls.
ok(wait_for_file("$dir/at.charge:5"), 'charge:5 is stopped before its call');
kill_pids("$dir/at.charge:5");
# Killed after its call and before its report: charge:9 was applied, the
# worker dies with its report unmade; the next attempt calls again, flagged
# uncertain, and the receiver applies nothing twice. A dispatcher starts
# another worker for each one killed.
ok(wait_for_file("$dir/at.charge:9"), 'charge:9 is stopped after its call');
kill_pids("$dir/at.charge:9");
start_dispatcher();

# The postmaster killed under load; the server started again, the
# dispatchers connect again.
$node->poll_query_until('postgres', q{SELECT count(*) >= 40 FROM idem.effects WHERE state = 'done'})
  or die 'no progress before the crash';
# Its backends notice and exit (the last releases the shared memory a new
# postmaster must not find in use); any left after 10 s are killed too.
my $postmaster = $node->safe_psql('postgres', 'SELECT pg_backend_pid()') && $node->{_pid};
my @backends = children_of($postmaster);
$node->kill9;
for (1 .. 100) { last unless grep { kill 0, $_ } @backends; usleep(100_000); }
kill 'KILL', @backends;
usleep(200_000);
ok($node->start(fail_ok => 1), 'the server starts again after the postmaster was killed');

# Killed before and after a call again, among effects recorded after the
# restart (their NOTIFY wakes the dispatchers).
$node->safe_psql('postgres', q{SELECT count(*) FROM (SELECT idem.record_effect('charge:' || g, 'charge',
  jsonb_build_object('order', g)) FROM generate_series(61, 120) g) s});
ok(wait_for_file("$dir/at.charge:70"), 'charge:70 is stopped before its call');
kill_pids("$dir/at.charge:70");
ok(wait_for_file("$dir/at.charge:95"), 'charge:95 is stopped after its call');
kill_pids("$dir/at.charge:95");
$node->poll_query_until('postgres', q{SELECT count(*) >= 80 FROM idem.effects WHERE state = 'done'})
  or die 'no progress after the crash';
# Killed after reports: every worker of every dispatcher, between effects
# or in a call; the dispatchers start new ones.
for my $d (@dispatchers) { kill 'KILL', children_of($d->{h}{KIDS}[0]{PID}); }

ok($node->poll_query_until('postgres', q{SELECT count(*) = 120 FROM idem.effects WHERE state = 'done'}),
	'every effect is done');
# SIGTERM: the dispatchers finish and stop, exit status 0.
for my $d (@dispatchers)
{
	$d->{h}->signal('TERM');
	$d->{h}->finish;
	is($d->{h}->full_result(0), 0, 'a dispatcher stops on SIGTERM with exit status 0');
}

is($node->safe_psql('receiver', q{SELECT count(*) FROM applied}), '120', 'the receiver applied 120 keys');
is($node->safe_psql('receiver', q{SELECT count(*) FROM
  (SELECT uncertain, row_number() OVER (PARTITION BY key ORDER BY token) AS nth FROM calls) s
  WHERE nth > 1 AND NOT uncertain}),
	'0', 'a key is called again only by an attempt flagged uncertain');
is($node->safe_psql('receiver', q{SELECT string_agg(key || ' ' || count, ', ' ORDER BY key COLLATE "C") FROM
  (SELECT key, count(*) FROM calls WHERE key IN ('charge:5', 'charge:9', 'charge:70', 'charge:95') GROUP BY key) s}),
	'charge:5 1, charge:70 1, charge:9 2, charge:95 2',
	'killed before the call: called once; after the call: called again');
is($node->safe_psql('receiver', q{SELECT string_agg(key, ', ' ORDER BY key COLLATE "C") FROM
  (SELECT DISTINCT key FROM calls WHERE uncertain AND key IN ('charge:5', 'charge:9', 'charge:70', 'charge:95')) s}),
	'charge:5, charge:70, charge:9, charge:95', 'the attempt after a killed one is flagged uncertain');
is($node->safe_psql('postgres', q{SELECT count(*) FROM idem.effects
  WHERE state <> 'done' OR (answer->>'token')::bigint <> token OR answer->'payload' <> payload}),
	'0', 'every done effect holds its last attempt\'s answer: no older token\'s report took hold');
my $last_calls = $node->safe_psql('receiver', q{SELECT string_agg(key || ' ' || token, ',' ORDER BY key)
  FROM (SELECT DISTINCT ON (key) key, token FROM calls ORDER BY key, token DESC) s});
my $final = $node->safe_psql('postgres',
	q{SELECT string_agg(key || ' ' || token, ',' ORDER BY key) FROM idem.effects});
is($final, $last_calls, 'each effect ended with the token of the last call the receiver saw');

done_testing();
