# Errors under the extension's calls carry a short CONTEXT in the user's
# terms: the function and its step, never the generated statement (issue
# 42). 0.8.0 sent a 7.5 kB FATAL, the whole merge statement as CONTEXT, to a
# backend terminated in a merge, and a cancel during the run's record
# printed `SQL statement "INSERT INTO idem.run_log ..."`.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('context');
$node->init;
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_idempotent;
CREATE TABLE ctx_target (id int PRIMARY KEY, v text);
INSERT INTO ctx_target VALUES (1, 'a');
});
my $connstr = $node->connstr('postgres');
my $psql = $node->installed_command(['psql'])->[0];

# Starts psql -c $sql with application_name $name; returns the harness and
# references to its stdout and stderr.
sub start_session {
	my ($name, $sql) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ $psql, '-X', '-d', "$connstr application_name=$name", '-c', $sql ],
		'>', \$out, '2>', \$err);
	return ($h, \$out, \$err);
}

sub pid_of {
	my ($name, $where) = @_;
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = '$name' AND $where")
	  or die "$name did not reach: $where";
	return $node->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE application_name = '$name'");
}

# --- a terminate inside the merge statement ----------------------------------
my $source = q{SELECT g AS id, 'b' AS v FROM generate_series(1, 10) g WHERE pg_sleep(60)::text = ''};
my ($h, $out, $err) = start_session('ctx_merge', "SELECT * FROM idem.merge_query('ctx_target', \$q\$$source\$q\$)");
my $pid = pid_of('ctx_merge', q{wait_event = 'PgSleep'});
my $log_offset = -s $node->logfile;
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)"), 't', 'terminate sent');
$h->finish;
like($$err, qr/FATAL:  terminating connection due to administrator command/, 'the merge backend was terminated');
like($$err, qr/^CONTEXT:  idem\.merge_query: merging the batch into the target$/m,
	'CONTEXT names the function and the step');
unlike($$err, qr/OPERATOR\(pg_catalog|SQL statement/, 'and not the generated statement');
cmp_ok(length($$err), '<', 400, 'the report is short (' . length($$err) . ' bytes; 0.8.0 sent 7.5 kB)');
my $log = slurp_file($node->logfile, $log_offset);
like($log, qr/FATAL:  terminating connection due to administrator command\n[^\n]*CONTEXT:  idem\.merge_query: merging/,
	'the server log has the same short CONTEXT');
unlike($log, qr/OPERATOR\(pg_catalog/, 'the server log has no generated statement either');

# --- a cancel while the run is recorded --------------------------------------
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN');
$locker->query_safe('LOCK TABLE idem.run_log IN SHARE MODE');
($h, $out, $err) = start_session('ctx_record', q{SELECT * FROM idem.merge_query('ctx_target', 'SELECT 1 AS id, ''c'' AS v')});
$pid = pid_of('ctx_record', q{wait_event_type = 'Lock'});
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', 'cancel sent');
$h->finish;
like($$err, qr/ERROR:  canceling statement due to user request/, 'the merge was cancelled');
like($$err, qr/^CONTEXT:  idem\.merge_query: recording the run in idem\.run_log$/m,
	'CONTEXT names the function and the step');
unlike($$err, qr/INSERT INTO idem\.run_log/, 'and not the internal statement');
$locker->query_safe('ROLLBACK');
$locker->quit;
is($node->safe_psql('postgres', 'SELECT v FROM ctx_target'), 'a', 'neither call wrote anything');

# --- the extension's own errors carry no CONTEXT line ------------------------
my ($rc, $stdout, $stderr) = $node->psql('postgres',
	q{SELECT * FROM idem.merge_query('ctx_target', 'SELECT NULL::int AS id, ''d'' AS v')});
like($stderr, qr/ERROR:  null value in key column id of the source/, 'a NULL key is refused');
unlike($stderr, qr/CONTEXT/, 'with no CONTEXT (it names its problem itself)');

# --- a statement the user wrote stays in CONTEXT -----------------------------
($rc, $stdout, $stderr) = $node->psql('postgres', q{SELECT idem.checksum_query('SELECT 1/0')});
like($stderr, qr/CONTEXT:  SQL statement "SELECT 1\/0"\nidem\.checksum_query/, "the caller's statement, then the function");

$node->stop;
done_testing();
