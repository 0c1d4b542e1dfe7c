# Fencing tokens across a crash: worker A leases an export and, in an open
# transaction, writes its page; its lease runs out, worker B takes the key
# over (a larger token) and saves its progress; A's backend is killed with
# SIGKILL mid-transaction. After recovery A's page is not there, the key is
# B's (token, recovery point), A's token is refused (ID004), B completes, and
# the next token is larger than every one handed out before the crash.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('fencing');
$node->init;
$node->append_conf('postgresql.conf', "restart_after_crash = on\n");
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_idempotent;
CREATE TABLE exported (page int, worker text);
});

my $token_a = $node->safe_psql('postgres', q{SELECT idem.claim_lease('export_1', 'fence', '1 second')});
like($token_a, qr/^\d+$/, 'A holds a token');

# A's transaction: its page written, open, as a worker paused mid-export.
my $bg = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
chomp $pid;
$bg->query_safe(q{BEGIN; INSERT INTO exported VALUES (1, 'a')});

# A's lease runs out; B takes the key over and saves its progress.
$node->poll_query_until('postgres',
	q{SELECT state = 'expired' FROM idem.key_status('export_1', 'fence')})
  or die 'the lease did not expire';
my $token_b = $node->safe_psql('postgres', q{SELECT idem.claim_lease('export_1', 'fence', '1 hour')});
cmp_ok($token_b, '>', $token_a, 'the takeover draws a larger token');
$node->safe_psql('postgres', qq{
INSERT INTO exported VALUES (1, 'b');
SELECT idem.save_point('export_1', 'page 1', 'fence', $token_b);
});

# A's backend dies mid-transaction.
kill 'KILL', $pid;
eval { $bg->{run}->kill_kill; 1 } or note "psql had already ended: $@";
my $ready = 0;
for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
{
	last if $ready = PostgreSQL::Test::Utils::run_log(
		[ 'pg_isready', '-q', '-h', $node->host, '-p', $node->port, '-d', 'postgres' ]);
	usleep(100_000);
}
$ready or die 'server did not recover';

is($node->safe_psql('postgres', q{SELECT string_agg(page || ' ' || worker, ',') FROM exported}),
	'1 b', 'after recovery: B\'s page only, none of A\'s');
is($node->safe_psql('postgres',
	q{SELECT state || ' ' || recovery_point || ' ' || token FROM idem.key_status('export_1', 'fence')}),
	"in_progress page 1 $token_b", 'the key is B\'s: its token and its recovery point');

my ($rc, $out, $err) = $node->psql('postgres', qq{
BEGIN;
INSERT INTO exported VALUES (2, 'a');
SELECT idem.save_point('export_1', 'page 2', 'fence', $token_a);
COMMIT;
}, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ID004: lease lost: idempotency key "export_1" in scope "fence" was taken over by token $token_b/,
	'A\'s token is refused after the crash');
is($node->safe_psql('postgres', q{SELECT count(*) FROM exported WHERE worker = 'a'}), '0',
	'and A\'s late page went with its transaction');

$node->safe_psql('postgres', qq{SELECT idem.complete('export_1', '{"pages": 1}', 'fence', $token_b)});
is($node->safe_psql('postgres', q{SELECT state || ' ' || result FROM idem.key_status('export_1', 'fence')}),
	'done {"pages": 1}', 'B completes');

# The sequence is WAL-logged ahead of the values it hands out: crash
# recovery never hands one out again.
my $token_c = $node->safe_psql('postgres', q{SELECT idem.claim_lease('export_2', 'fence', '1 hour')});
cmp_ok($token_c, '>', $token_b, 'after the crash the next token is larger than every earlier one');

my $log = slurp_file($node->logfile);
like($log, qr/terminated by signal 9/, 'the crash did happen');
unlike($log, qr/PANIC|TRAP:/, 'no PANIC or assertion failure');
done_testing();
