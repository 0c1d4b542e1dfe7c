# run_once commits the data and the watermark together or not at all: a
# backend killed with SIGKILL in the middle of a run_once transaction, and a
# server stopped with -m immediate, leave neither moved after recovery; a run
# that committed before the crash keeps both.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->append_conf('postgresql.conf', "restart_after_crash = on\n");
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_idempotent;
CREATE TABLE loaded (id int);
});

# A run that commits: both facts stay.
$node->safe_psql('postgres',
	q{SELECT idem.run_once('job', 10, 'INSERT INTO loaded SELECT generate_series(1, 10)')});

sub state_now {
	return $node->safe_psql('postgres', q{SELECT count(*) || ' rows, watermark ' || idem.watermark('job') FROM loaded});
}
is(state_now(), '10 rows, watermark 10', 'committed run: data and watermark');

# Starts run_once(20) whose query inserts rows, then sleeps: the transaction
# is open with the data written when the crash comes.
sub start_slow_run {
	my $bg = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	chomp $pid;
	$bg->query_until(qr/started/, q{
\echo started
SELECT idem.run_once('job', 20, 'INSERT INTO loaded SELECT generate_series(11, 20); SELECT pg_sleep(600)');
});
	$node->poll_query_until('postgres',
		"SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = $pid")
	  or die 'run_once did not reach its sleep';
	return ($bg, $pid);
}

# 1. kill -9 the backend.
my ($bg, $pid) = start_slow_run();
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid"), '1',
	'run_once is in flight');
kill 'KILL', $pid;
# psql has lost its server (and may have ended, so that flushing its stdin
# fails with EPIPE): do not wait on it
eval { $bg->{run}->kill_kill; 1 } or note "psql had already ended: $@";
# pg_isready reads no input: a psql fed its query on stdin that is refused
# while recovery runs exits before reading it, and IPC::Run's write then
# fails with EPIPE, which ends the test.
my $ready = 0;
for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
{
	last if $ready = PostgreSQL::Test::Utils::run_log(
		[ 'pg_isready', '-q', '-h', $node->host, '-p', $node->port, '-d', 'postgres' ]);
	Time::HiRes::usleep(100_000);
}
$ready or die 'server did not recover';
is(state_now(), '10 rows, watermark 10', 'after kill -9 mid run_once: neither data nor watermark moved');

# 2. stop the server with -m immediate.
($bg, $pid) = start_slow_run();
$node->stop('immediate');
# psql has lost its server (and may have ended, so that flushing its stdin
# fails with EPIPE): do not wait on it
eval { $bg->{run}->kill_kill; 1 } or note "psql had already ended: $@";
$node->start;
is(state_now(), '10 rows, watermark 10', 'after an immediate shutdown mid run_once: neither moved');

# The job then runs cleanly, once.
$node->safe_psql('postgres',
	q{SELECT idem.run_once('job', 20, 'INSERT INTO loaded SELECT generate_series(11, 20)')});
$node->safe_psql('postgres',
	q{SELECT idem.run_once('job', 20, 'INSERT INTO loaded SELECT generate_series(11, 20)')});
is(state_now(), '20 rows, watermark 20', 'the rerun after recovery applies once');

my $log = slurp_file($node->logfile);
like($log, qr/terminated by signal 9/, 'the crash did happen');
unlike($log, qr/PANIC|TRAP:/, 'no PANIC or assertion failure');
done_testing();
