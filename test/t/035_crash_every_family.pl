# Crash safety of every family: a backend killed with SIGKILL, or the server
# stopped with -m immediate, at points inside the transaction of merge,
# append, replace_where / overwrite_partition, the key functions, the
# checkpoint functions, snapshot and publish / rollback / pin. After crash recovery the target
# tables and idem's state tables are exactly as before the transaction (or,
# for a crash right after COMMIT returned, exactly as after it), never in
# between; and the job then rerun leaves the same state as one clean run of
# it in another database.
#
# Crash points, per family:
#   running  - the function is still executing: either sleeping in a row
#              trigger (or the caller's query) after it has written, or
#              waiting on a lock that another session holds;
#   returned - every function of the transaction has returned, COMMIT not sent;
#   committed - COMMIT has returned (the "after" must survive).
# SIGKILL of one backend makes the postmaster kill every backend, throw away
# shared memory and run crash recovery from WAL, as an immediate shutdown
# and restart does: both are checked against the log. PostgreSQL::Test's
# clusters run with fsync = off: the OS keeps its page cache, so this tests
# PostgreSQL's crash recovery (what a process crash leaves), not power loss.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes;

my $node = PostgreSQL::Test::Cluster->new('crash_every_family');
$node->init;
$node->append_conf('postgresql.conf', "restart_after_crash = on\n");
$node->start;

# The same objects in two databases: 'crashdb' is crashed, 'cleandb' runs each
# job once, cleanly, as the reference for "the rerun equals one clean run".
my $setup = <<'SQL';
CREATE EXTENSION pg_idempotent;

-- Makes the session the test is about to crash wait inside a function, after
-- that function has written something. Only that session sets crash.pause_in,
-- so the clean runs and the reruns never wait.
CREATE FUNCTION crash_pause(tag text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('crash.pause_in', true) = tag THEN
    PERFORM pg_sleep(600);
  END IF;
  RETURN true;
END $$;
CREATE FUNCTION crash_pause_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM crash_pause(TG_ARGV[0]);
  RETURN NULL;
END $$;

-- One line per relation: every table, partition and view of schema public
-- (the targets, the dataset's view with a digest of its definition, its
-- version tables), then every table idem registers with
-- pg_extension_config_dump (its state). Exact: every column, as stored.
-- Normalized (to compare two databases): without the columns that differ
-- between two correct runs: clock stamps (timestamptz), durations
-- (interval), transaction ids (xid8), the run history's backend pid, and
-- numbers drawn from a sequence (not transactional: after a crash
-- nextval jumps ahead by design); reg* columns as names, since OIDs differ
-- between databases.
CREATE FUNCTION crash_state(normalized boolean) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r record;
  cols text;
  lines text[] := '{}';
BEGIN
  FOR r IN SELECT c.oid, c.relname, c.relkind FROM pg_class c
           WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v')
           ORDER BY c.relname LOOP
    lines := lines || (r.relname || ' ' || r.relkind::text || ' ' || idem.checksum(r.oid::regclass)
                       || CASE WHEN r.relkind = 'v' THEN ' view ' || md5(pg_get_viewdef(r.oid)) ELSE '' END);
  END LOOP;
  FOR r IN SELECT c.oid, c.oid::regclass::text AS name
           FROM pg_extension e CROSS JOIN unnest(e.extconfig) AS x(oid) JOIN pg_class c ON c.oid = x.oid
           WHERE e.extname = 'pg_idempotent' AND c.relkind = 'r'
           ORDER BY 2 LOOP
    IF normalized THEN
      SELECT string_agg(CASE WHEN a.atttypid IN ('regclass'::regtype, 'regtype'::regtype, 'regrole'::regtype,
                                                 'regnamespace'::regtype, 'regproc'::regtype)
                             THEN quote_ident(a.attname) || '::text' ELSE quote_ident(a.attname) END,
                        ', ' ORDER BY a.attnum)
        INTO cols
        FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
       WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
         AND a.atttypid NOT IN ('timestamptz'::regtype, 'interval'::regtype, 'xid8'::regtype)
         AND NOT (r.name = 'idem.run_log' AND a.attname = 'backend_pid')
         AND coalesce(pg_get_expr(d.adbin, d.adrelid), '') NOT LIKE 'nextval(%';
      lines := lines || (r.name || ' ' || idem.checksum_query(format('SELECT %s FROM %s', cols, r.oid::regclass)));
    ELSE
      lines := lines || (r.name || ' ' || idem.checksum(r.oid::regclass));
    END IF;
  END LOOP;
  RETURN array_to_string(lines, E'\n');
END $$;

-- merge: a versioned merge with deletes (tombstones) and a delete_missing
-- snapshot merge.
CREATE TABLE accounts (id int PRIMARY KEY, balance numeric, v int);
INSERT INTO accounts SELECT g, g * 10, 1 FROM generate_series(1, 50) g;
-- an earlier run deleted key 50 at version 1: its tombstone must survive
SELECT * FROM idem.merge_query('accounts', $q$SELECT 50 AS id, NULL::numeric AS balance, 1 AS v, true AS deleted$q$,
                               version_column => 'v', delete_column => 'deleted');
CREATE TABLE accounts_batch (id int, balance numeric, v int, deleted boolean);
INSERT INTO accounts_batch SELECT g, g * 11, 2, false FROM generate_series(1, 10) g;      -- updates
INSERT INTO accounts_batch SELECT g, NULL, 2, true FROM generate_series(11, 15) g;       -- deletes: tombstones
INSERT INTO accounts_batch SELECT g, g * 10, 1, false FROM generate_series(51, 60) g;    -- inserts
INSERT INTO accounts_batch VALUES (16, 0, 0, false), (50, 0, 0, false);                  -- stale
CREATE TABLE stores (store text PRIMARY KEY, city text);
INSERT INTO stores VALUES ('a', 'Ghent'), ('b', 'Lyon'), ('c', 'Porto');
CREATE TABLE stores_snapshot (store text, city text);
INSERT INTO stores_snapshot VALUES ('a', 'Ghent'), ('b', 'Lille'), ('d', 'Turin');      -- c is missing
CREATE TRIGGER accounts_pause AFTER INSERT OR UPDATE OR DELETE ON accounts
  FOR EACH ROW EXECUTE FUNCTION crash_pause_trigger('accounts');
CREATE TRIGGER stores_pause AFTER INSERT OR UPDATE OR DELETE ON stores
  FOR EACH ROW EXECUTE FUNCTION crash_pause_trigger('stores');

-- append: an event log partitioned by day without a global unique index
-- (appends take turns), half of the batch already there.
CREATE TABLE app_log (event_id bigint NOT NULL, day date NOT NULL, kind text, received_at timestamptz)
  PARTITION BY RANGE (day);
CREATE TABLE app_log_1 PARTITION OF app_log FOR VALUES FROM ('2024-07-06') TO ('2024-07-07');
CREATE TABLE app_log_2 PARTITION OF app_log FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE INDEX ON app_log (event_id);
INSERT INTO app_log SELECT g, '2024-07-06', 'k' || g % 3, '2024-07-06 12:00+00' FROM generate_series(1, 20) g;
CREATE TABLE app_batch (event_id bigint, day date, kind text, received_at timestamptz);
INSERT INTO app_batch SELECT g, CASE WHEN g <= 20 THEN '2024-07-06' ELSE '2024-07-07' END::date, 'k' || g % 3,
                                '2024-07-07 09:00+00' FROM generate_series(11, 40) g;
CREATE TRIGGER app_pause AFTER INSERT ON app_log
  FOR EACH ROW EXECUTE FUNCTION crash_pause_trigger('app_log');

-- overwrite: a plain table (replace_where) and a partitioned one
-- (overwrite_partition, mode rewrite).
CREATE TABLE raw_orders (day date, store text, amount numeric);
INSERT INTO raw_orders SELECT '2024-07-07', 's' || (g % 4 + 1), g FROM generate_series(1, 40) g;
CREATE TABLE daily (day date, store text, amount numeric);
INSERT INTO daily SELECT d::date, 's' || s, s * 100
  FROM generate_series('2024-07-05'::date, '2024-07-07', '1 day') d, generate_series(1, 3) s;
CREATE TABLE sales (day date, store text, amount numeric) PARTITION BY RANGE (day);
CREATE TABLE sales_20240706 PARTITION OF sales FOR VALUES FROM ('2024-07-06') TO ('2024-07-07');
CREATE TABLE sales_20240707 PARTITION OF sales FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
INSERT INTO sales SELECT * FROM daily WHERE day >= '2024-07-06';
CREATE TRIGGER daily_pause AFTER INSERT ON daily FOR EACH ROW EXECUTE FUNCTION crash_pause_trigger('daily');
CREATE TRIGGER sales_pause AFTER INSERT ON sales FOR EACH ROW EXECUTE FUNCTION crash_pause_trigger('sales');

-- keys: a key done earlier, and a leased key in progress.
CREATE TABLE fulfilments (event_id text, note text);
INSERT INTO fulfilments SELECT 'evt_0', 'earlier' WHERE idem.claim('evt_0', 'webhooks');
SELECT idem.claim('export_1', 'exports', lease => '1 hour');
SELECT idem.save_point('export_1', 'page 6', 'exports');

-- checkpoints: watermarks, a window, and a rewind already in the log.
CREATE TABLE events (id int, payload text);
INSERT INTO events SELECT g, 'e' || g FROM generate_series(1, 100) g;
CREATE TABLE loaded (id int);
SELECT idem.advance('events_job', 100);
SELECT idem.run_once('loader', 10, 'INSERT INTO loaded SELECT generate_series(1, 10)');
SELECT idem.mark_window('daily_job', '2024-07-01'::date, '2024-07-02'::date);
SELECT idem.advance('old_job', 10);
SELECT idem.rewind('old_job', 5);
CREATE TRIGGER loaded_pause AFTER INSERT ON loaded FOR EACH ROW EXECUTE FUNCTION crash_pause_trigger('loaded');

-- snapshot: a history of 30 customers; then 5 change, 3 are gone
-- (invalidate closes them), 4 are new. The pause is a BEFORE INSERT
-- trigger: snapshot opens versions only after it has closed the old ones,
-- so a crash there comes between the two (fixed as_of: the checksums of
-- public tables include the validity columns).
CREATE FUNCTION crash_pause_before() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM crash_pause(TG_ARGV[0]);
  RETURN NEW;
END $$;
CREATE TABLE cust (id int PRIMARY KEY, tier text);
INSERT INTO cust SELECT g, 't' || g % 3 FROM generate_series(1, 30) g;
CREATE TABLE cust_hist (id int NOT NULL, tier text, valid_from timestamptz NOT NULL, valid_to timestamptz);
SELECT idem.snapshot_prepare('cust_hist', '{id}');
SELECT * FROM idem.snapshot('cust_hist', 'cust', '{id}', as_of => '2024-07-01 00:00+00');
UPDATE cust SET tier = 'changed' WHERE id <= 5;
DELETE FROM cust WHERE id > 27;
INSERT INTO cust SELECT g, 'new' FROM generate_series(31, 34) g;
CREATE TRIGGER cust_hist_pause BEFORE INSERT ON cust_hist
  FOR EACH ROW EXECUTE FUNCTION crash_pause_before('cust_hist');

-- publish: versions 1 and 2 of a dataset, 2 current.
CREATE TABLE orders (store text, amount numeric);
INSERT INTO orders VALUES ('a', 10), ('b', 20);
SELECT idem.publish('public.revenue', 'SELECT store, sum(amount) AS revenue FROM orders GROUP BY store');
INSERT INTO orders VALUES ('c', 5);
SELECT idem.publish('public.revenue', 'SELECT store, sum(amount) AS revenue FROM orders GROUP BY store');
INSERT INTO orders VALUES ('d', 7);
SQL

$node->safe_psql('postgres', 'CREATE DATABASE crashdb');
$node->safe_psql('postgres', 'CREATE DATABASE cleandb');
$node->safe_psql($_, $setup) for qw(crashdb cleandb);

# The state tables the install script registers must all be covered.
my $state_tables = $node->safe_psql('crashdb', q{
SELECT string_agg(c.oid::regclass::text, ',' ORDER BY c.oid::regclass::text)
  FROM pg_extension e CROSS JOIN unnest(e.extconfig) AS x(oid) JOIN pg_class c ON c.oid = x.oid
 WHERE e.extname = 'pg_idempotent' AND c.relkind = 'r'});
note "idem state tables checksummed: $state_tables";
for my $t (qw(idem.keys idem.checkpoints idem.checkpoint_log idem.windows idem.tombstones
	idem.datasets idem.dataset_versions idem.usage_grant_rows idem.run_log))
{
	ok((grep { $_ eq $t } split /,/, $state_tables), "$t is part of the checked state");
}

sub state_of
{
	my ($db, $normalized) = @_;
	return $node->safe_psql($db, "SELECT crash_state($normalized)");
}

# The relations whose line differs between two crash_state texts.
sub changed
{
	my ($from_text, $to_text) = @_;
	my (%from, %to);
	for ([ \%from, $from_text ], [ \%to, $to_text ])
	{
		my ($lines, $text) = @$_;
		for (split /\n/, $text)
		{
			my ($name, $rest) = split / /, $_, 2;
			$lines->{$name} = $rest;
		}
	}
	my %names = (%from, %to);
	return join ' ', grep { ($from{$_} // '') ne ($to{$_} // '') } sort keys %names;
}

sub open_session
{
	my $bg = $node->background_psql('crashdb', on_error_stop => 1);
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	chomp $pid;
	return ($bg, $pid);
}

# Ends the psql sessions of a crashed server. A psql that saw its server go
# may have exited already, and IPC::Run, flushing what was left for its
# stdin, then fails with EPIPE: the session is gone either way, which is all
# that is needed.
sub end_sessions
{
	for my $session (@_)
	{
		eval { $session->{run}->kill_kill; 1 }
		  or note "psql had already ended: $@";
	}
	return;
}

# Waits until the server accepts connections again after a crash. pg_isready
# reads no input: a psql fed its query on stdin (poll_query_until) that is
# refused while recovery runs exits before reading it, and IPC::Run's write
# then fails with EPIPE, which ends the test.
sub wait_until_ready
{
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		return if PostgreSQL::Test::Utils::run_log(
			[ 'pg_isready', '-q', '-h', $node->host, '-p', $node->port, '-d', 'postgres' ]);
		Time::HiRes::usleep(100_000);
	}
	die 'server did not recover';
}

# Crashes the server: SIGKILL to backend $pid, or an immediate shutdown and a
# restart. Returns when the server accepts connections again, having checked
# in the log that crash recovery ran (so no state survived in shared memory).
sub crash
{
	my ($how, $pid, @sessions) = @_;
	my $offset = -s $node->logfile;
	if ($how eq 'kill -9')
	{
		kill 'KILL', $pid or die "could not signal backend $pid";
		# 15 says "server process", 18 the process's type ("client backend")
		$node->wait_for_log(qr/(?:server process|client backend) \(PID $pid\) was terminated by signal 9/, $offset);
		$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
		# psql has lost its server; do not wait on it
		end_sessions(@sessions);
		wait_until_ready();
	}
	elsif ($how eq 'immediate')
	{
		$node->stop('immediate');
		end_sessions(@sessions);
		$node->start;
	}
	else { die "unknown crash $how" }
	$node->wait_for_log(qr/database system was not properly shut down; automatic recovery in progress/, $offset);
	return;
}

# One crash inside the job's transaction; asserts that the state afterwards
# is exactly $before.
sub crash_inside
{
	my ($family, $job, $changes, $before, %c) = @_;
	my $what = "$family, $c{point}" . ($c{where} ? " ($c{where})" : '') . ", $c{how}";
	my @blockers;
	my $blocker_pid;
	if ($c{blocker})
	{
		# Another session holds a lock the job will wait for, in an open
		# transaction; the crash ends it too.
		my $blocker;
		($blocker, $blocker_pid) = open_session();
		$blocker->query_safe("BEGIN;\n$c{blocker}");
		push @blockers, $blocker;
	}
	my ($bg, $pid) = open_session();
	if ($c{point} eq 'returned')
	{
		$bg->query_safe("BEGIN;\n$job");
		my $inside = $bg->query_safe('SELECT crash_state(false)');
		is(changed($before, $inside), $changes, "$what: the open transaction has changed $changes");
	}
	elsif ($c{point} eq 'running')
	{
		my $pause = $c{pause} ? "SET LOCAL crash.pause_in = '$c{pause}';\n" : '';
		$bg->query_until(qr/started/, "BEGIN;\n$pause\\echo started\n$job\n");
		# Wait until the function named in $c{statement} is sleeping in the
		# trigger or waiting for the lock (or the job has stopped early: an
		# error must not cost the poll's whole timeout).
		# Only once the job's statement is the session's query: between
		# "started" and the statement, psql's session is briefly idle in
		# the transaction, which is not an early stop.
		# With a blocker, the pause is a wait for the blocker itself: a job
		# also waits briefly for other locks on its way (to extend a
		# relation, on a loaded machine), which is not the pause.
		# Every comparison is NULL-safe: while the job runs without waiting
		# (loading a staging table, say) wait_event is NULL, and a NULL here
		# once ended the poll as if the job had stopped (a pg18 failure).
		my $waits = defined $blocker_pid
		  ? "$blocker_pid = ANY (pg_blocking_pids(pid))"
		  : q{wait_event_type IS NOT DISTINCT FROM 'Lock'};
		my $paused = qq{(query LIKE '$c{statement}' AND (wait_event IS NOT DISTINCT FROM 'PgSleep' OR $waits))};
		my $stopped = qq{(query LIKE '$c{statement}' AND state IS DISTINCT FROM 'active')};
		$node->poll_query_until('crashdb',
			"SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)"
			  . " OR EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid AND ($paused OR $stopped))")
		  or die "$what: the job did not reach its pause";
		if ($node->safe_psql('crashdb', "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid AND $paused)") ne 't')
		{
			$bg->{run}->pump_nb;
			die "$what: the job stopped before its pause: $bg->{stderr}";
		}
		# The crash must come after the transaction has written: it holds
		# ROW EXCLUSIVE (taken by INSERT, UPDATE, DELETE) on the tables in
		# $c{writes}, the ones the statements before the pause write.
		my $writing = $node->safe_psql('crashdb', qq{
SELECT string_agg(DISTINCT l.relation::regclass::text, ' ')
  FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
 WHERE l.pid = $pid AND l.mode = 'RowExclusiveLock' AND l.granted AND c.relkind IN ('r', 'p')});
		my %writing = map { $_ => 1 } split / /, $writing;
		ok(!(grep { !$writing{$_} } split / /, $c{writes}),
			"$what: the transaction is writing $c{writes} when the crash comes")
		  or diag "tables it holds ROW EXCLUSIVE on: $writing";
	}
	else { die "unknown point $c{point}" }
	crash($c{how}, $pid, $bg, @blockers);
	is(state_of('crashdb', 'false'), $before, "$what: after recovery, exactly the state before");
	return;
}

# Runs every crash point of a family, then the job to COMMIT followed at once
# by a crash, and compares with one clean run.
sub family
{
	my ($family, $job, $changes, $after_commit_how, @cases) = @_;
	my $before = state_of('crashdb', 'false');
	is(state_of('crashdb', 'true'), state_of('cleandb', 'true'), "$family: both databases start equal");

	crash_inside($family, $job, $changes, $before, %$_) for @cases;

	# The reference: one clean run.
	$node->safe_psql('cleandb', "BEGIN;\n$job\nCOMMIT;");

	# The rerun, crashed right after its COMMIT returned: the after must be
	# durable, exactly. The same session reads the after, one statement
	# later, so nothing else can have changed it before the crash.
	my ($bg, $pid) = open_session();
	$bg->query_safe("BEGIN;\n$job\nCOMMIT;");
	my $after = $bg->query_safe('SELECT crash_state(false)');
	is(changed($before, $after), $changes, "$family: the job changed $changes");
	crash($after_commit_how, $pid, $bg);
	is(state_of('crashdb', 'false'), $after, "$family, committed, $after_commit_how: after recovery, exactly the state after");
	is(state_of('crashdb', 'true'), state_of('cleandb', 'true'),
		"$family: crashed attempts plus the rerun leave what one clean run leaves");
	return;
}

my $t0 = time;

family('merge', <<'SQL', 'accounts idem.run_log idem.tombstones stores', 'kill -9',
SELECT * FROM idem.merge('accounts', 'accounts_batch', version_column => 'v', delete_column => 'deleted');
SELECT * FROM idem.merge('stores', 'stores_snapshot', delete_missing => true);
SQL
	{ point => 'running', where => 'versioned merge, in a trigger', how => 'kill -9',
	  pause => 'accounts', statement => '%idem.merge(%accounts_batch%', writes => 'accounts' },
	{ point => 'running', where => 'delete_missing merge, in a trigger', how => 'immediate',
	  pause => 'stores', statement => '%idem.merge(%stores_snapshot%',
	  writes => 'accounts idem.run_log idem.tombstones stores' },
	{ point => 'returned', how => 'kill -9' },
	{ point => 'returned', how => 'immediate' });

family('append', <<'SQL', 'app_log app_log_2 idem.run_log', 'immediate',
SELECT * FROM idem.append('app_log', 'app_batch', key => '{event_id}', exclude_columns => '{received_at}',
                          within => '2 days');
SQL
	{ point => 'running', where => 'append, in a trigger', how => 'kill -9',
	  pause => 'app_log', statement => '%idem.append(%', writes => 'app_log_2' },
	{ point => 'returned', how => 'kill -9' },
	{ point => 'returned', how => 'immediate' });

my $overwrite_query = q{SELECT day, store, sum(amount) FROM raw_orders WHERE day = ''2024-07-07'' GROUP BY 1, 2};
family('overwrite', <<"SQL", 'daily idem.run_log sales sales_20240707', 'immediate',
SELECT * FROM idem.replace_where('daily', 'day = ''2024-07-07''', '$overwrite_query');
SELECT * FROM idem.overwrite_partition('sales', '2024-07-07'::date, '$overwrite_query');
SQL
	{ point => 'running', where => 'replace_where, in a trigger', how => 'kill -9',
	  pause => 'daily', statement => '%idem.replace_where(%', writes => 'daily' },
	{ point => 'running', where => 'overwrite_partition, in a trigger', how => 'immediate',
	  pause => 'sales', statement => '%idem.overwrite_partition(%',
	  writes => 'daily idem.run_log sales_20240707' },
	{ point => 'returned', how => 'kill -9' },
	{ point => 'returned', how => 'immediate' });

# Mode 'swap': the staging table is loaded, then the swap waits for the
# parent's lock (a reader holds it) or has detached, attached and dropped the
# old partition when the crash comes; no staging or __replaced_ table
# survives (crash_state lists every table of schema public).
my $swap_query = q{SELECT day, store, sum(amount) + 1 FROM raw_orders WHERE day = ''2024-07-07'' GROUP BY 1, 2};
family('overwrite swap', <<"SQL", 'idem.run_log sales sales_20240707', 'kill -9',
SELECT * FROM idem.overwrite_partition('sales', '2024-07-07'::date, '$swap_query', mode => 'swap');
SQL
	# (It has created and loaded the staging table by then; other sessions
	# cannot see an uncommitted table in pg_class, so there is nothing to
	# name in writes.)
	{ point => 'running', where => 'waiting for the parent lock', how => 'kill -9',
	  blocker => 'SELECT count(*) FROM sales;', statement => q{%mode => ''swap''%},
	  writes => '' },
	{ point => 'returned', how => 'kill -9' },
	{ point => 'returned', how => 'immediate' });

family('keys', <<'SQL', 'fulfilments idem.keys', 'kill -9',
INSERT INTO fulfilments SELECT 'evt_1', 'webhook' WHERE idem.claim('evt_1', 'webhooks');
SELECT idem.complete('evt_1', '{"status": 200}', 'webhooks');
SELECT idem.once('evt_2', 'INSERT INTO fulfilments SELECT ''evt_2'', ''once'' WHERE crash_pause(''once'') RETURNING event_id',
                 'webhooks');
SELECT idem.save_point('export_1', 'page 7', 'exports');
INSERT INTO fulfilments VALUES ('export_1', 'page 7');
SELECT idem.complete('export_1', '{"rows": 2000}', 'exports');
SQL
	{ point => 'running', where => 'once, in its query', how => 'kill -9',
	  pause => 'once', statement => '%idem.once(%', writes => 'fulfilments idem.keys' },
	{ point => 'running', where => 'once, waiting for a concurrent claim', how => 'immediate',
	  blocker => q{SELECT idem.claim('evt_2', 'webhooks');}, statement => '%idem.once(%',
	  writes => 'fulfilments idem.keys' },
	{ point => 'returned', how => 'kill -9' },
	{ point => 'returned', how => 'immediate' });

family('checkpoints', <<'SQL', 'events idem.checkpoint_log idem.checkpoints idem.run_log idem.windows loaded', 'immediate',
INSERT INTO events SELECT g, 'e' || g FROM generate_series(101, 200) g;
SELECT idem.advance('events_job', 200, expected => '100');
SELECT idem.run_once('loader', 20, 'INSERT INTO loaded SELECT generate_series(11, 20)');
SELECT idem.mark_window('daily_job', '2024-07-02'::date, '2024-07-03'::date);
SELECT idem.rewind('old_job', 3);
SQL
	{ point => 'running', where => 'advance, waiting for lock_job of another runner', how => 'kill -9',
	  blocker => q{SELECT idem.lock_job('events_job');}, statement => '%idem.advance(%',
	  writes => 'events' },
	{ point => 'running', where => 'run_once, in its query', how => 'immediate',
	  pause => 'loaded', statement => '%idem.run_once(%', writes => 'events idem.checkpoints loaded' },
	{ point => 'returned', how => 'kill -9' },
	{ point => 'returned', how => 'immediate' });

my $snapshot_job = q{SELECT * FROM idem.snapshot('cust_hist', 'cust', '{id}', hard_deletes => 'invalidate', as_of => '2024-07-02 00:00+00');};
family('snapshot', <<"SQL", 'cust_hist idem.run_log', 'kill -9',
$snapshot_job
SQL
	{ point => 'running', where => 'snapshot, old versions closed, new ones being opened', how => 'kill -9',
	  pause => 'cust_hist', statement => '%idem.snapshot(%', writes => 'cust_hist' },
	{ point => 'running', where => 'snapshot, waiting for another snapshot of the history', how => 'immediate',
	  blocker => $snapshot_job, statement => '%idem.snapshot(%', writes => '' },
	{ point => 'returned', how => 'kill -9' },
	{ point => 'returned', how => 'immediate' });

family('publish', <<'SQL', 'idem.dataset_versions idem.datasets idem.run_log revenue revenue__v3', 'kill -9',
SELECT idem.publish('public.revenue', 'SELECT store, sum(amount) AS revenue FROM orders GROUP BY store');
SELECT idem.pin('public.revenue', 1);
SQL
	{ point => 'running', where => 'publish, flip waiting for a reader of the view', how => 'kill -9',
	  blocker => 'SELECT count(*) FROM revenue;', statement => '%idem.publish(%',
	  # the version table is built (and commented: pg_description) before the
	  # flip; the dataset's row is locked (FOR UPDATE), written after it
	  writes => 'pg_description' },
	{ point => 'returned', how => 'immediate' });

family('rollback', <<'SQL', 'idem.dataset_versions idem.datasets idem.run_log revenue', 'immediate',
SELECT idem.pin('public.revenue', 3);
SELECT idem.rollback('public.revenue');
SQL
	{ point => 'running', where => 'rollback, flip waiting for a reader of the view', how => 'immediate',
	  blocker => 'SELECT count(*) FROM revenue;', statement => '%idem.rollback(%',
	  writes => 'idem.dataset_versions' },
	{ point => 'returned', how => 'kill -9' });

note sprintf('crash cases took %d s', time - $t0);

my $log = slurp_file($node->logfile);
unlike($log, qr/PANIC|TRAP:/, 'no PANIC or assertion failure');
done_testing();
