# The pg_idempotent command line against a real server, with real external
# jobs: a psql script that is rerun-safe, a shell script that appends, a job
# that stamps now() (each run is its own transaction, so now() differs), a
# failing command, a missing table; text and --json output; exit codes.
use strict;
use warnings;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# make install puts the tool beside the server's programs: those of the
# installation under test, whose pg_config comes first on PATH.
chomp(my $bindir = `pg_config --bindir`);
my $cli = "$bindir/pg_idempotent";
ok(-x $cli, 'pg_idempotent is installed by make install');

my $node = PostgreSQL::Test::Cluster->new('cli');
$node->init;
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_idempotent;
CREATE TABLE raw_orders (day date, store text, amount numeric);
INSERT INTO raw_orders SELECT '2024-07-07', 'store ' || (g % 3), g FROM generate_series(1, 30) g;
CREATE TABLE daily_sales (day date, store text, revenue numeric, loaded_at timestamptz,
                          PRIMARY KEY (day, store));
CREATE TABLE naive_sales (store text, day date, revenue numeric);
});
my $conninfo = $node->connstr('postgres');
my $dir = PostgreSQL::Test::Utils::tempdir();

# The jobs, as files a team would have.
open my $fh, '>', "$dir/merge_job.sql" or die;
print $fh q{SELECT * FROM idem.merge_query('daily_sales',
  $$SELECT day, store, sum(amount) AS revenue, NULL::timestamptz AS loaded_at FROM raw_orders GROUP BY day, store$$);
};
close $fh;
open $fh, '>', "$dir/stamp_job.sql" or die;
print $fh q{SELECT * FROM idem.merge_query('daily_sales',
  $$SELECT day, store, sum(amount) AS revenue, now() AS loaded_at FROM raw_orders GROUP BY day, store$$);
};
close $fh;
open $fh, '>', "$dir/append_job.sh" or die;
print $fh "#!/bin/sh\npsql -X -q -d \"\$1\" -c \"INSERT INTO naive_sales SELECT store, day, sum(amount) FROM raw_orders GROUP BY day, store\"\n";
close $fh;
chmod 0755, "$dir/append_job.sh";

sub cli {
	my @args = @_;
	my ($stdout, $stderr);
	IPC::Run::run([$cli, @args], '>', \$stdout, '2>', \$stderr);
	return ($? >> 8, $stdout, $stderr);
}

my ($rc, $out, $err) = cli('--help');
is($rc, 0, '--help exits 0');
like($out, qr/Examples:.*rerun -d/s, '--help shows examples');
like($out, qr/3 run 1 changed none of the tables/, '--help lists exit status 3');
like($out, qr/COMMAND connects where rerun does/, '--help says COMMAND gets the connection');

# A rerun-safe psql script.
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'daily_sales', '--', 'psql', '-X', '-q', '-d', $conninfo, '-o', '/dev/null', '-f', "$dir/merge_job.sql");
is($rc, 0, 'a merge job is rerun-safe: exit 0');
like($out, qr/^run 1\tdaily_sales\tv1:3:[0-9a-f]{32}$/m, 'one line per run and table');
like($out, qr/^rerun-safe/m, 'says so');
like($err, qr/run 2: checksumming daily_sales/, 'progress on stderr');

# A shell script that appends: exit 1 with the rows that differ.
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'naive_sales', '--runs', '3', '--', "$dir/append_job.sh", $conninfo);
is($rc, 1, 'an appending job is not rerun-safe: exit 1');
like($out, qr/NOT rerun-safe: run 2 changed naive_sales/, 'names the run and the table');
like($out, qr/^\+ \{"store": "store \d", "day": "2024-07-07", "revenue": \d+\}$/m, 'shows a sample of the added rows, columns in table order');

# A job that stamps now(): caught here because each run is its own transaction.
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'daily_sales', '--json', '--', 'psql', '-X', '-q', '-d', $conninfo, '-o', '/dev/null', '-f', "$dir/stamp_job.sql");
is($rc, 1, 'a job stamping now() is not rerun-safe: exit 1');
my $doc = eval { decode_json($out) };
ok($doc, '--json prints one JSON document') or diag($out);
is($doc->{rerun_safe}, JSON::PP::false, 'rerun_safe is false');
is($doc->{difference}{table}, 'daily_sales', 'the difference names the table');
is(scalar @{ $doc->{difference}{added} }, 3, 'three rows re-stamped in run 2');
is(scalar @{ $doc->{checksums} }, 2, 'a checksum per run and table');
# ...and passes once loaded_at is excluded.
# (Its rows are there already, so with loaded_at left out run 1 changes
# nothing: that proves nothing, unless the job is allowed to be a no-op.)
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'daily_sales', '--exclude-column', 'loaded_at', '--', 'psql', '-X', '-q', '-d', $conninfo, '-o', '/dev/null', '-f', "$dir/stamp_job.sql");
is($rc, 3, 'a job whose run 1 changes no watched table: exit 3');
like($out, qr/^nothing was proven: run 1 changed none of the watched tables/m, 'says nothing was proven');
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'daily_sales', '--exclude-column', 'loaded_at', '--allow-unchanged', '--', 'psql', '-X', '-q', '-d', $conninfo, '-o', '/dev/null', '-f', "$dir/stamp_job.sql");
is($rc, 0, 'with --exclude-column loaded_at and --allow-unchanged the stamping job passes');
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'daily_sales', '--json', '--', 'true');
is($rc, 3, 'a job that writes nothing: exit 3');
$doc = eval { decode_json($out) };
ok($doc && !defined $doc->{rerun_safe} && $doc->{proven} == JSON::PP::false, '--json: rerun_safe null, proven false')
  or diag($out);

# -d reaches COMMAND: the job connects through its PG* environment, which
# rerun sets from its own connection (here PGDATABASE names another
# database, as a CI job's environment may). 0.8.0 watched postgres while
# the job appended elsewhere, and said rerun-safe.
$node->safe_psql('postgres', 'CREATE DATABASE elsewhere');
$node->safe_psql('elsewhere', 'CREATE TABLE naive_sales (store text, day date, revenue numeric)');
{
	local %ENV = %ENV;
	$ENV{PGDATABASE} = 'elsewhere';
	delete @ENV{qw(PGHOST PGPORT PGSERVICE)};
	($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'naive_sales', '--', 'psql', '-X', '-q',
		'-c', 'INSERT INTO naive_sales SELECT store, day, sum(amount) FROM raw_orders GROUP BY day, store');
	is($rc, 1, 'a job using its PG* environment appends where rerun watches: exit 1');
	like($err, qr/COMMAND's connection:.* PGDATABASE=postgres/, 'stderr shows the connection COMMAND gets');
	($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'daily_sales', '--allow-unchanged', '--',
		'sh', '-c', "echo \"\$PGDATABASE \$PGPORT \$PGHOST\" > $dir/env.txt");
	is($rc, 0, 'a job that only looks at its environment');
	open my $envf, '<', "$dir/env.txt" or die;
	chomp(my $seen = <$envf>);
	close $envf;
	is($seen, 'postgres ' . $node->port . ' ' . $node->host, 'COMMAND has PGDATABASE, PGPORT and PGHOST of -d');
}
is($node->safe_psql('elsewhere', 'SELECT count(*) FROM naive_sales'), '0', 'nothing was written elsewhere');

# A table the job creates in run 1 (a first dbt run, a migration then a
# load): absent before run 1, and every later run must leave it as run 1 did.
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'made_by_job', '--runs', '3', '--', 'psql', '-X', '-q', '-d', $conninfo,
	'-c', 'CREATE TABLE IF NOT EXISTS made_by_job (id int PRIMARY KEY)',
	'-c', 'INSERT INTO made_by_job VALUES (1), (2) ON CONFLICT DO NOTHING');
is($rc, 0, 'a job that creates and fills its table is rerun-safe: exit 0');
like($out, qr/^before\tmade_by_job\tabsent$/m, 'the table was absent before run 1');
like($out, qr/^run 3\tmade_by_job\tv1:2:[0-9a-f]{32}$/m, 'and holds the same two rows after run 3');
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'made_log', '--', 'psql', '-X', '-q', '-d', $conninfo,
	'-c', 'CREATE TABLE IF NOT EXISTS made_log (id int)', '-c', 'INSERT INTO made_log VALUES (1)');
is($rc, 1, 'a job that creates its table and appends to it: exit 1');
like($out, qr/NOT rerun-safe: run 2 changed made_log/, 'names the table it created');
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'made_and_dropped', '--', 'psql', '-X', '-q', '-d', $conninfo,
	'-c', 'DROP TABLE IF EXISTS made_and_dropped_flag',
	'-c', q{DO $$ BEGIN IF to_regclass('made_and_dropped') IS NULL THEN CREATE TABLE made_and_dropped (id int); ELSE DROP TABLE made_and_dropped; END IF; END $$});
is($rc, 1, 'a job that creates its table in run 1 and drops it in run 2: exit 1');
like($out, qr/NOT rerun-safe: run 2 changed made_and_dropped \(dropped it\)/, 'says run 2 dropped it');

# Exit 2: usage, a missing table, a failing command, no server.
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'daily_sales');
is($rc, 2, 'no command: exit 2');
like($err, qr/needs the job's command after --/, 'usage error explained');
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'no_such_table', '--', 'true');
is($rc, 3, 'a table that never appears: exit 3 (absent before and after run 1: nothing proven)');
like($out, qr/^before\tno_such_table\tabsent$/m, 'shown as absent');
($rc, $out, $err) = cli('checksum', '-d', $conninfo, 'no_such_table');
is($rc, 2, 'checksum of a missing table: exit 2');
like($err, qr/table "no_such_table": relation "no_such_table" does not exist/, 'names the table');
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'daily_sales', '--', 'sh', '-c', 'exit 7');
is($rc, 2, 'a failing command: exit 2');
like($err, qr/run 1: the command failed with exit status 7/, 'shows its exit status');
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '-t', 'daily_sales', '--runs', '1', '--', 'true');
is($rc, 2, '--runs 1: exit 2');
($rc, $out, $err) = cli('checksum', '-d', 'host=/nonexistent port=1 dbname=x', 'daily_sales');
is($rc, 2, 'no server: exit 2');
like($err, qr/could not connect/, 'says it could not connect');

# checksum, by conninfo and through the PG* environment.
($rc, $out, $err) = cli('checksum', '-d', $conninfo, 'daily_sales', 'naive_sales');
is($rc, 0, 'checksum exits 0');
my $expected = $node->safe_psql('postgres', q{SELECT 'daily_sales' || chr(9) || idem.checksum('daily_sales')});
like($out, qr/^\Q$expected\E$/m, 'checksum prints what idem.checksum returns');
{
	local %ENV = %ENV;
	$ENV{PGHOST} = $node->host;
	$ENV{PGPORT} = $node->port;
	$ENV{PGDATABASE} = 'postgres';
	($rc, $out, $err) = cli('checksum', '--json', 'daily_sales');
	is($rc, 0, 'connects through the PG* environment');
	my $j = decode_json($out);
	is($j->{checksums}[0]{table}, 'daily_sales', 'checksum --json names the table');
}
# The outbox is state too (--effects SCOPE): a job that records its effects
# keyed by what they are for records nothing new when rerun; one keyed by
# the time records a new effect every run.
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '--effects', 'mail', '--', 'psql', '-X', '-q', '-d', $conninfo,
	'-o', '/dev/null', '-c',
	q{SELECT idem.record_effect('receipt:' || store, 'email', jsonb_build_object('store', store), 'mail') FROM (SELECT DISTINCT store FROM raw_orders) s});
is($rc, 0, 'a job recording effects keyed by what they are for is rerun-safe: exit 0') or diag($out, $err);
like($out, qr/^rerun-safe/m, 'says so');
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '--effects', 'mail', '--', 'psql', '-X', '-q', '-d', $conninfo,
	'-o', '/dev/null', '-c', q{SELECT idem.record_effect('digest:' || clock_timestamp(), 'email', '{}', 'mail')});
is($rc, 1, 'a job keying its effect by the time is not rerun-safe: exit 1') or diag($out, $err);
like($out, qr/NOT rerun-safe: run 2 changed effects in scope mail/, 'names the run and the outbox');
($rc, $out, $err) = cli('rerun', '-d', $conninfo, '--effects', 'nobody', '--', 'true');
isnt($rc, 0, 'an outbox nothing records in proves nothing') or diag($out, $err);

done_testing();
