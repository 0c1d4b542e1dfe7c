# A connection pool keeps a backend for days and calls the extension in it
# again and again: no call may leave memory behind in the session. For every
# function family, one backend runs a warm-up of N iterations (caches, plans
# and the allocator reach their steady state), then 4N more; the backend's
# memory after 5N iterations must stay within a small bound of its memory
# after N (RssAnon: its steady growth, twice the smaller of the two halves,
# N to 3N and 3N to 5N, so a single step of the allocator is not a leak).
# Both the private resident memory (RssAnon from /proc, as in
# 010_cancel_and_memory.pl: it sees malloc and C++ new as well as palloc)
# and the bytes in use in PostgreSQL's memory contexts
# (pg_backend_memory_contexts.used_bytes, exact where RssAnon moves in pages)
# are compared. Every iteration is its own transaction, and the error path
# of each family (a PostgreSQL error crossing the C++ boundary and caught by
# the caller) runs too.
#
# A control proves the measurement can fail: PREPARE keeps each statement in
# the session (about 10 kB each), and it must exceed the same bounds.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

# Growth allowed between iteration N and iteration 5N. Measured here:
# RssAnon 50 kB at most (publish: 150 kB), contexts nothing (publish: see
# there). Each family makes about 1000 calls or more over those 4N
# iterations, so a malloc leak of about 0.5 kB per call, or a palloc leak of
# about 70 bytes per call, goes over a bound.
my $rss_bound_kb = 512;
my $context_bound_kb = 64;

my $node = PostgreSQL::Test::Cluster->new('memory_growth');
$node->init;
$node->start;

# try(sql, sqlstate): runs sql, which must fail with that SQLSTATE, and
# swallows the error as a caller's exception handler would; anything else
# (no error, another error) stops the test.
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_idempotent;
CREATE FUNCTION try(sql text, sqlstate text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
    BEGIN
        EXECUTE sql;
    EXCEPTION WHEN others THEN
        IF SQLSTATE = try.sqlstate THEN RETURN; END IF;
        RAISE EXCEPTION 'expected % from %, got %: %', try.sqlstate, sql, SQLSTATE, SQLERRM;
    END;
    RAISE EXCEPTION 'expected % from %, got no error', try.sqlstate, sql;
END $f$;

CREATE TABLE cs_t AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 200) g;
CREATE TABLE cs_u AS SELECT g AS id, md5(g::text) AS v FROM generate_series(5, 204) g;

CREATE TABLE m_target (id int PRIMARY KEY, v text);
CREATE TABLE m_src_a AS SELECT g AS id, 'a' || g AS v FROM generate_series(1, 100) g;
CREATE TABLE m_src_b AS SELECT g AS id, 'b' || g AS v FROM generate_series(1, 120) g;

CREATE TABLE rw_t (day int, id int, v text);

CREATE TABLE op_p (day date, id int, v text) PARTITION BY RANGE (day);
CREATE TABLE op_p_0707 PARTITION OF op_p FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');

CREATE TABLE cp_loaded (n bigint);

CREATE SCHEMA marts;

CREATE TABLE rr_t (id int PRIMARY KEY, v text);
CREATE TABLE rr_log (n int);
});

# Each family: the statements of one iteration, as format() templates with
# %1$s = the iteration i, %2$s = i % 2, %3$s = i % 3 (so content alternates
# and both the writing and the skipping paths run); each statement is its own
# transaction. warmup is N. vacuum: the tables the family writes, vacuumed
# every 50 iterations as autovacuum would, because dead index entries grow
# the backend's memory without any leak: assert_rerun_safe of a job that
# deletes and inserts 20 rows of a table with a primary key, rolled back each
# time, grew RssAnon by 770 kB per 1000 calls while glibc's malloc_stats()
# showed the bytes in use unchanged (the heap's high-water mark rising with
# the bloat), and not at all with a VACUUM every 100 calls.
my @families = (
	{
		name => 'checksum, checksum_query, diff',
		warmup => 250,
		sql => [
			q{SELECT idem.checksum('cs_t'), idem.checksum('cs_t', '{v}')},
			q{SELECT idem.checksum_query('SELECT * FROM cs_t WHERE id > %3$s')},
			q{SELECT count(*) FROM idem.diff('cs_t', 'cs_u', max_rows => 5)},
			q{SELECT try('SELECT idem.checksum_query(''SELEC 1'')', '42601')},
		],
	},
	{
		name => 'merge, merge_query',
		warmup => 80,
		vacuum => 'm_target',
		sql => [
			q{SELECT * FROM idem.merge('m_target', 'm_src_a', delete_missing => true)},
			q{SELECT * FROM idem.merge_query('m_target', 'SELECT * FROM m_src_b')},
			q{SELECT * FROM idem.merge_query('m_target', 'SELECT * FROM m_src_b')},
			q{SELECT try('SELECT * FROM idem.merge(''m_target'', ''m_src_a'', key => ''{nope}'')', '42703')},
		],
	},
	{
		name => 'replace_where',
		warmup => 200,
		vacuum => 'rw_t',
		sql => [
			q{SELECT * FROM idem.replace_where('rw_t', 'day = 1', 'SELECT 1 AS day, g AS id, ''v%2$s'' AS v FROM generate_series(1, 50) g')},
			q{SELECT * FROM idem.replace_where('rw_t', 'day = 1', 'SELECT 1 AS day, g AS id, ''v%2$s'' AS v FROM generate_series(1, 50) g')},
			q{SELECT try('SELECT * FROM idem.replace_where(''rw_t'', ''day = 1'', ''SELECT 2 AS day, 1 AS id, ''''x'''' AS v'')', '23514')},
		],
	},
	{
		name => 'overwrite_partition',
		warmup => 150,
		vacuum => 'op_p',
		sql => [
			q{SELECT * FROM idem.overwrite_partition('op_p', '2024-07-07'::date, 'SELECT ''2024-07-07''::date AS day, g AS id, ''v%2$s'' AS v FROM generate_series(1, 50) g')},
			q{SELECT * FROM idem.overwrite_partition('op_p', '2024-07-07', 'SELECT ''2024-07-07''::date AS day, g AS id, ''v%2$s'' AS v FROM generate_series(1, 50) g')},
			q{SELECT try('SELECT * FROM idem.overwrite_partition(''op_p'', ''2024-07-07''::date, ''SELECT ''''2024-07-08''''::date AS day, 1 AS id, ''''x'''' AS v'')', '23514')},
		],
	},
	{
		name => 'claim, complete, once',
		warmup => 250,
		vacuum => 'idem.keys',
		sql => [
			q{SELECT idem.claim('k%1$s', 'mem', 'fp'), idem.claim('k%1$s', 'mem', 'fp')},
			q{SELECT idem.claim('l%1$s', 'mem', lease => '1 hour')},
			q{SELECT idem.save_point('l%1$s', 'half', 'mem')},
			q{SELECT idem.complete('l%1$s', '{"n": %1$s}', 'mem'), idem.result('l%1$s', 'mem')},
			q{SELECT idem.once('o%1$s', 'SELECT %1$s AS n', 'mem'), idem.once('o%1$s', 'SELECT %1$s AS n', 'mem')},
			q{SELECT try('SELECT idem.claim(''k%1$s'', ''mem'', ''other'')', 'ID001')},
		],
	},
	{
		name => 'advance, run_once',
		warmup => 250,
		vacuum => 'cp_loaded',
		sql => [
			q{SELECT idem.advance('job_a', %1$s::bigint), idem.watermark('job_a', NULL::bigint)},
			q{SELECT idem.run_once('job_b', %1$s::bigint, 'INSERT INTO cp_loaded VALUES (%1$s)')},
			q{SELECT idem.run_once('job_b', %1$s::bigint, 'INSERT INTO cp_loaded VALUES (%1$s)')},
			q{SELECT try('SELECT idem.advance(''job_a'', 0::bigint)', '22023')},
		],
	},
	{
		# Each new version table leaves about 310 bytes in CacheMemoryContext
		# that PostgreSQL never frees: negative catalog cache entries (no
		# pg_statistic rows for its columns) made while planning queries
		# over it. Plain SQL that creates a table, queries it and drops it
		# grows the same, 312 kB per 1000 tables, and republishing the same
		# content, which creates no table, grows nothing.
		name => 'publish, rollback',
		warmup => 100,
		context_bytes_per_iteration => 400,
		sql => [
			q{SELECT idem.publish('marts.pub', 'SELECT g AS id, %3$s AS v FROM generate_series(1, 20) g')},
			q{SELECT idem.publish('marts.pub', 'SELECT g AS id, %3$s AS v FROM generate_series(1, 20) g')},
			q{SELECT CASE WHEN %1$s %% 4 = 0 THEN idem.rollback('marts.pub') END},
		],
	},
	{
		name => 'assert_rerun_safe',
		warmup => 150,
		vacuum => 'rr_t, rr_log',
		sql => [
			q{SELECT count(*) FROM idem.assert_rerun_safe('INSERT INTO rr_t SELECT g, ''x'' FROM generate_series(1, 20) g ON CONFLICT DO NOTHING', '{rr_t}')},
			q{SELECT try('SELECT * FROM idem.assert_rerun_safe(''INSERT INTO rr_log VALUES (%1$s)'', ''{rr_log}'')', 'ID002')},
		],
	},
);

my $control = {
	name => 'control: PREPARE keeps every statement',
	warmup => 250,
	sql => [q{PREPARE p%1$s AS SELECT %1$s AS n, repeat('x', 100) AS pad, now() AS at FROM pg_class WHERE relname = 'cs_t'}],
};

sub rss_anon_kb
{
	my ($p) = @_;
	open(my $fh, '<', "/proc/$p/status") or return undef;
	while (<$fh>) { return $1 if /^RssAnon:\s+(\d+)\s+kB/; }
	return undef;
}

# Runs iterations $from..$to of a family: psql's \gexec sends each column of
# each generated row as its own statement, in order, so the test's own
# script stays small however many iterations it makes.
sub run_iterations
{
	my ($session, $family, $from, $to) = @_;
	my $columns = join(', ',
		map { "format(\$tmpl\$$_\$tmpl\$, g, g % 2, g % 3)" } @{ $family->{sql} });
	$columns .= ", CASE WHEN g % 50 = 0 THEN 'VACUUM $family->{vacuum}' ELSE 'SELECT 1' END"
	  if $family->{vacuum};
	$session->query_safe(
		"\\o /dev/null\nSELECT $columns FROM generate_series($from, $to) g \\gexec\n\\o");
}

sub memory
{
	my ($session, $pid) = @_;
	my $contexts = $session->query_safe(
		'SELECT sum(used_bytes) FROM pg_backend_memory_contexts');
	return (rss_anon_kb($pid), $contexts / 1024);
}

# Returns the growth from iteration N to 5N: RssAnon in its two halves (N to
# 3N, 3N to 5N; kB) and the memory contexts over the whole (kB).
sub growth
{
	my ($family) = @_;
	my $n = $family->{warmup};
	my $session = $node->background_psql('postgres');
	$session->query_safe('SET client_min_messages = error');
	my $pid = $session->query_safe('SELECT pg_backend_pid()');
	chomp $pid;
	my $t0 = time;
	run_iterations($session, $family, 1, $n);
	my ($rss_n, $ctx_n) = memory($session, $pid);
	run_iterations($session, $family, $n + 1, 3 * $n);
	my ($rss_3n) = memory($session, $pid);
	run_iterations($session, $family, 3 * $n + 1, 5 * $n);
	my ($rss_5n, $ctx_5n) = memory($session, $pid);
	$session->quit;
	note sprintf('%s: %d iterations in %.1f s; RssAnon %d -> %d -> %d kB, contexts %d -> %d kB',
		$family->{name}, 5 * $n, time - $t0, $rss_n, $rss_3n, $rss_5n, $ctx_n, $ctx_5n);
	return ($rss_3n - $rss_n, $rss_5n - $rss_3n, $ctx_5n - $ctx_n);
}

# A leak grows RssAnon in both halves; the allocator's heap can also step up
# once (a new arena page, a high-water mark under a loaded machine: 516 to
# 528 kB were seen once in a half, in merge, with 84 kB on a quiet run). The
# steady growth is therefore twice the smaller half: equal to the whole for
# a leak, small for a single step.
sub steady { my ($a, $b) = @_; return 2 * ($a < $b ? $a : $b); }

foreach my $family (@families)
{
	my ($rss_a, $rss_b, $ctx) = growth($family);
	my $rss = steady($rss_a, $rss_b);
	my $iterations = 4 * $family->{warmup};
	my $ctx_bound = $context_bound_kb +
	  ($family->{context_bytes_per_iteration} // 0) * $iterations / 1024;
	ok($rss <= $rss_bound_kb,
		sprintf('%s: RssAnon grows %d kB steadily over %d more iterations (%d + %d kB in its halves; bound %d kB)',
			$family->{name}, $rss, $iterations, $rss_a, $rss_b, $rss_bound_kb));
	ok($ctx <= $ctx_bound,
		sprintf('%s: memory contexts grow %d kB over %d more iterations (bound %d kB)',
			$family->{name}, $ctx, $iterations, $ctx_bound));
}

my ($rss_a, $rss_b, $ctx) = growth($control);
my $rss = steady($rss_a, $rss_b);
ok($rss > $rss_bound_kb && $ctx > $context_bound_kb,
	sprintf('%s: RssAnon grows %d kB steadily (%d + %d kB), contexts %d kB, both over their bounds',
		$control->{name}, $rss, $rss_a, $rss_b, $ctx));

# The families really ran: each left its mark.
is($node->safe_psql('postgres', q{
SELECT concat_ws(' ',
    (SELECT count(*) FROM idem.keys WHERE scope = 'mem'),
    idem.watermark('job_a'), idem.watermark('job_b'),
    (SELECT count(*) FROM cp_loaded),
    (SELECT count(*) FROM m_target),
    (SELECT count(*) FROM rw_t), (SELECT count(*) FROM op_p),
    (SELECT count(*) FROM rr_t), (SELECT count(*) FROM rr_log))}),
	'3750 1250 1250 1250 120 50 50 0 0',
	'every family ran all its iterations (keys, watermarks, rows)');

$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|PANIC|TRAP:/, 'no crash in the server log');

done_testing();
