# Two promises that need a server watched from outside:
#  - pg_cancel_backend during a long, CPU-bound checksum ends it cleanly, and
#    the same session then works;
#  - a checksum streams: the backend's memory does not grow with the table.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', "shared_buffers = 128MB\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_idempotent');

# --- cancel -----------------------------------------------------------------
my $bg = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
chomp $pid;
ok($pid =~ /^\d+$/, "background session has pid $pid");

# A checksum over two billion generated rows runs for minutes unless stopped.
$bg->query_until(qr/started/, q{
\echo started
SELECT idem.checksum_query('SELECT g FROM generate_series(1, 2000000000) g');
});
$node->poll_query_until('postgres',
	"SELECT state = 'active' AND query LIKE '%generate_series%' FROM pg_stat_activity WHERE pid = $pid")
  or die 'checksum did not start';
usleep(300_000);
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', 'cancel sent');

my ($alive, $ret) = $bg->query(q{SELECT 'alive', idem.checksum_query('VALUES (1)')});
like($bg->{stderr}, qr/canceling statement due to user request/, 'the checksum was cancelled with 57014');
like($alive, qr/^alive\|v1:1:[0-9a-f]{32}$/m, 'the same session runs the extension again');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid"), '1',
	'the backend survived the cancel');
$bg->quit;

# --- memory -----------------------------------------------------------------
# Compressible 3 kB values: every row is decompressed by the checksum, so a
# per-row leak would show as hundreds of megabytes on the larger table.
$node->safe_psql('postgres', q{
CREATE TABLE small_t AS SELECT g AS id, repeat(md5(g::text), 94) AS payload FROM generate_series(1, 60000) g;
CREATE TABLE large_t AS SELECT g AS id, repeat(md5(g::text), 94) AS payload FROM generate_series(1, 600000) g;
VACUUM ANALYZE small_t, large_t;
});
ok($node->safe_psql('postgres', q{SELECT pg_column_compression(payload) FROM small_t LIMIT 1}) ne '',
	'payloads are stored compressed, so the checksum decompresses each one');

sub rss_anon_kb {
	my ($p) = @_;
	open(my $fh, '<', "/proc/$p/status") or return undef;
	while (<$fh>) { return $1 if /^RssAnon:\s+(\d+)\s+kB/; }
	return undef;
}

# Runs $sql in a fresh session and samples that backend's RssAnon until done.
sub peak_rss_during {
	my ($sql) = @_;
	my $s = $node->background_psql('postgres');
	my $p = $s->query_safe('SELECT pg_backend_pid()');
	chomp $p;
	my $before = rss_anon_kb($p);
	$s->{stdin} .= "$sql;\n\\echo QUERY_DONE\n";
	my ($peak, $samples) = (0, 0);
	my $deadline = time + 300;
	while ($s->{stdout} !~ /QUERY_DONE/ && time < $deadline) {
		$s->{run}->pump_nb;
		my $rss = rss_anon_kb($p);
		if (defined $rss) { $peak = $rss if $rss > $peak; $samples++; }
		usleep(2_000);
	}
	my $output = $s->{stdout};
	$s->quit;
	return ($before, $peak, $samples, $output);
}

my ($b_small, $p_small, $n_small, $o_small) = peak_rss_during(q{SELECT idem.checksum('small_t')});
my ($b_large, $p_large, $n_large, $o_large) = peak_rss_during(q{SELECT idem.checksum('large_t')});
like($o_small, qr/v1:60000:/, 'checksum of 60k rows');
like($o_large, qr/v1:600000:/, 'checksum of 600k rows');
ok($n_large >= 10, "memory sampled $n_large times during the large checksum");
my $growth_mb = ($p_large - $p_small) / 1024;
note sprintf('peak RssAnon: 60k rows %.1f MB, 600k rows %.1f MB (idle %.1f / %.1f MB)',
	$p_small / 1024, $p_large / 1024, $b_small / 1024, $b_large / 1024);
ok($growth_mb < 16,
	sprintf('ten times the rows needs no more memory (growth %.1f MB, bound 16 MB)', $growth_mb));

# The sampler does see growth when a query really holds every row's value:
# the same measurement around string_agg of the small table (about 180 MB).
my ($b_agg, $p_agg, $n_agg) = peak_rss_during(
	q{SELECT idem.checksum_query('SELECT length(string_agg(payload, '''')) FROM small_t')});
ok(($p_agg - $b_agg) / 1024 > 100,
	sprintf('control: a query that keeps all rows shows %.0f MB of growth', ($p_agg - $b_agg) / 1024));

$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|PANIC|TRAP:/, 'no crash in the server log');

done_testing();
