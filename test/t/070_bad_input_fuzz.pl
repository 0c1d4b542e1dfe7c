# Bad input, generated: every function in schema idem, read from pg_proc
# (names, argument names and types, defaults), is called many times with
# arguments drawn from pools per type and per argument name: NULLs, empty and
# 1 MB strings, quotes, `;`, unicode, format specifiers, relations of every
# kind (views, sequences, indexes, partitioned, foreign, temporary tables,
# system catalogs, dangling OIDs), extreme numbers, intervals and timestamps,
# jsonb and arrays of odd shapes, caller SQL that commits, copies or fails.
# A small fixture lets many calls succeed.
#
# Each call runs in its own transaction that is rolled back, a quarter of
# them as an unprivileged role. After every call a cheap query proves the
# backend is still alive. The test fails when
#   - a backend dies (the call is named; the run reconnects and goes on),
#   - an ERROR has SQLSTATE XX000 or any class outside @ALLOWED_CLASSES, an
#     empty message, or says "cache lookup failed" / "unrecognized ..."
#     (internal errors dressed as user errors),
#   - a call runs into the statement timeout or temp_file_limit (bad input
#     must not hang or fill the disk),
#   - the state tables or the fixture differ afterwards (nothing leaked out
#     of the rolled-back transactions),
#   - the server log shows a crash,
#   - one of the deterministic refusals the contract promises is not made.
#
# Reproducible: FUZZ_SEED=<n> (printed at the start; fixed by default so CI
# is stable; FUZZ_SEED=random draws one), FUZZ_CALLS=<calls per function>,
# FUZZ_ONLY=<function regex>, FUZZ_VERBOSE=1 (every call and its outcome).
use strict;
use warnings;
use DBI;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $seed = $ENV{FUZZ_SEED} // 20240707;
$seed = int(rand(2**31)) if $seed eq 'random';
my $calls_per_function = $ENV{FUZZ_CALLS} // 100;
my $only = $ENV{FUZZ_ONLY};
my $statement_timeout_ms = 5000;
my $budget_seconds = $ENV{FUZZ_BUDGET} // 150;
note "fuzz seed $seed (rerun with FUZZ_SEED=$seed), $calls_per_function calls per function";
# Perl's rand is drand48 on every platform: a seed gives the same calls.
srand($seed);

# SQLSTATE classes a clear, user-facing refusal may have. Anything else
# (XX internal, 58 system error, 08 connection, ...) is reported.
my @ALLOWED_CLASSES = (
	'0A',    # feature_not_supported
	'21',    # cardinality_violation
	'22',    # data_exception (NULL, bad value, out of range, bad encoding)
	'23',    # integrity_constraint_violation
	'25',    # invalid_transaction_state (VACUUM in a function, ...)
	'2B',    # dependent_objects_still_exist
	'2D',    # invalid_transaction_termination (COMMIT in caller SQL)
	'2F',    # sql_routine_exception
	'3F',    # invalid_schema_name
	'40',    # transaction_rollback (serialization, deadlock)
	'42',    # syntax_error_or_access_rule_violation
	'44',    # with_check_option_violation
	'53',    # insufficient_resources (out of memory, temp_file_limit)
	'54',    # program_limit_exceeded
	'55',    # object_not_in_prerequisite_state, lock_not_available
	'57',    # operator_intervention (57014 other than our statement timeout)
	'P0',    # plpgsql_error (RAISE)
	'ID',    # pg_idempotent's own class (docs/errors.md)
);
my %allowed_class = map { $_ => 1 } @ALLOWED_CLASSES;

# Legitimate PostgreSQL messages that contain a word the checks look for.
my @ALLOWED_UNRECOGNIZED = (
	qr/^unrecognized exception condition "/,    # _raise with a code that is no condition name
);

# Outcomes that look like failures but are what the contract asks for.
my @ALLOWANCES = (
	{
		fn    => '_boundary_probe',
		state => 'XX000',
		sql   => qr/'throw'::text/,
		why   => 'the test probe raises an internal error on purpose (docs/errors.md)'
	},
	{
		fn    => '_grants_changed',
		state => '39P01',
		sql   => qr/_grants_changed/,
		why   => 'a trigger function called directly refuses with trigger_protocol_violated, as PostgreSQL\'s own do'
	},
	{
		fn    => 'assert_rerun_safe',
		state => '57014',
		sql   => qr/2147483647/,
		why   => 'the caller asked for 2^31 runs of a job; the statement timeout ends it cleanly'
	},
);

# --- the server ---------------------------------------------------------------
my $node = PostgreSQL::Test::Cluster->new('fuzz');
$node->init;
# ERRORs and statements are not logged (thousands of errors are expected,
# some carry 1 MB of text); crashes, PANICs and the postmaster's "terminated
# by signal" (with the statement that was running) still are. After a crash
# the server restarts, so the run goes on and reports every crashing call.
# temp_file_limit bounds a runaway call's disk use. Prepared transactions are
# possible, so that a function that managed to prepare one would leave it
# behind for the state check to find.
$node->append_conf('postgresql.conf', qq{
log_min_messages = log
log_statement = none
restart_after_crash = on
temp_file_limit = '256MB'
max_prepared_transactions = 2
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE fuzz');

# --- the fixture: small valid objects of every kind, and some idem state -----
$node->safe_psql('fuzz', q{
CREATE EXTENSION pg_idempotent;
CREATE EXTENSION file_fdw;
CREATE SERVER fx_files FOREIGN DATA WRAPPER file_fdw;
CREATE FOREIGN TABLE fx_foreign (id int, name text) SERVER fx_files OPTIONS (filename '/dev/null', format 'csv');
CREATE TYPE fx_comp AS (a int, b text);
CREATE TYPE fx_mood AS ENUM ('sad', 'happy');
CREATE DOMAIN fx_posint AS int CHECK (VALUE > 0);
CREATE TABLE fx_plain (id int PRIMARY KEY, name text, amount numeric, v int, deleted boolean NOT NULL DEFAULT false,
                       loaded_at timestamptz);
INSERT INTO fx_plain SELECT g, 'n' || g, g * 1.5, 1, false, '2024-07-07 00:00+00' FROM generate_series(1, 5) g;
CREATE TABLE fx_src (LIKE fx_plain);
INSERT INTO fx_src SELECT g, 'n' || g, g * 2.5, 2, g = 4, '2024-07-08 00:00+00' FROM generate_series(3, 8) g;
CREATE TABLE fx_nokey (id int, name text);
INSERT INTO fx_nokey VALUES (1, 'a'), (1, 'a'), (NULL, NULL);
CREATE INDEX fx_idx ON fx_nokey (id);
CREATE TABLE fx_part (day date NOT NULL, store text, amount numeric) PARTITION BY RANGE (day);
CREATE TABLE fx_part_0707 PARTITION OF fx_part FOR VALUES FROM ('2024-07-07') TO ('2024-07-08');
CREATE TABLE fx_part_0708 PARTITION OF fx_part FOR VALUES FROM ('2024-07-08') TO ('2024-07-09');
CREATE TABLE fx_part_default PARTITION OF fx_part DEFAULT;
CREATE INDEX fx_part_idx ON fx_part (store);
INSERT INTO fx_part VALUES ('2024-07-07', 's1', 1), ('2024-07-08', 's2', 2), ('2025-01-01', 's3', 3);
CREATE TABLE fx_list (k text, n int) PARTITION BY LIST (k);
CREATE TABLE fx_list_a PARTITION OF fx_list FOR VALUES IN ('a', 'it''s');
CREATE TABLE fx_multi (a int, b int) PARTITION BY RANGE (a, b);
CREATE TABLE fx_multi_1 PARTITION OF fx_multi FOR VALUES FROM (0, 0) TO (10, 10);
CREATE TABLE fx_hash (id int) PARTITION BY HASH (id);
CREATE TABLE fx_hash_0 PARTITION OF fx_hash FOR VALUES WITH (MODULUS 1, REMAINDER 0);
CREATE VIEW fx_view AS SELECT * FROM fx_plain;
CREATE MATERIALIZED VIEW fx_matview AS SELECT * FROM fx_plain;
CREATE SEQUENCE fx_seq;
CREATE UNLOGGED TABLE fx_unlogged (id int PRIMARY KEY, x text);
CREATE TABLE fx_gen (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, a int, b int GENERATED ALWAYS AS (a * 2) STORED);
INSERT INTO fx_gen (a) VALUES (1), (2);
CREATE TABLE fx_json (id int PRIMARY KEY, j json, jb jsonb, arr int[], f float8, pt point);
INSERT INTO fx_json VALUES (1, '{"a": 1}', '{"a": 1}', '{1,NULL}', 'NaN', '(1,2)'), (2, NULL, NULL, '{}', '-0', NULL);
CREATE TABLE fx_nocols ();
CREATE TABLE fx_dropped (id int PRIMARY KEY, gone text, name text);
ALTER TABLE fx_dropped DROP COLUMN gone;
CREATE TABLE "Fx Odd ""Name""" ("Col; x" int PRIMARY KEY, "UPPER" text);
CREATE TABLE fx_secret (id int PRIMARY KEY, s text);
CREATE TABLE fx_inh_parent (id int);
CREATE TABLE fx_inh_child () INHERITS (fx_inh_parent);
CREATE PROCEDURE fx_proc() LANGUAGE sql AS 'SELECT 1';
CREATE ROLE fuzz_user NOLOGIN;
CREATE ROLE "fx odd ""role""" NOLOGIN;
GRANT SELECT, INSERT, UPDATE, DELETE ON fx_plain, fx_src, fx_nokey, fx_part, fx_view TO fuzz_user;
SELECT idem.grant_usage('fuzz_user', 'fx_scope');
SELECT idem.claim('fx_done_key');
SELECT idem.claim('fx_leased_key', lease => '1 hour');
SELECT idem.claim('fx_scoped_key', 'fx_scope');
SELECT idem.once('fx_once_key', 'SELECT 1 AS one');
SELECT idem.advance('fx_job_bigint', 100::bigint);
SELECT idem.advance('fx_job_date', '2024-07-07'::date);
SELECT idem.advance('fx_job_ts', '2024-07-07 12:00+00'::timestamptz);
SELECT idem.advance('fx_job_text', 'm'::text);
SELECT idem.advance('fx_job_lsn', '0/16B3748'::pg_lsn);
SELECT idem.advance('fx_job_numeric', 1.5::numeric);
SELECT idem.mark_window('fx_job_windowed', '2024-07-01'::date, '2024-07-02'::date);
SELECT idem.publish('public.fx_pub', 'SELECT * FROM fx_src');
SELECT idem.publish('public.fx_pub', 'SELECT * FROM fx_src WHERE id > 3');
SELECT * FROM idem.merge_query('fx_plain', 'SELECT 5 AS id, 9 AS v, true AS deleted',
                               version_column => 'v', delete_column => 'deleted');
});

# Objects whose OID the pools need: a dropped table (a dangling regclass) and
# pg_proc's TOAST table.
my $gone_oid = $node->safe_psql('fuzz', q{
CREATE TABLE fx_gone (id int);
SELECT 'fx_gone'::regclass::oid;
DROP TABLE fx_gone;
});
my $toast = $node->safe_psql('fuzz',
	q{SELECT reltoastrelid::regclass FROM pg_class WHERE oid = 'pg_proc'::regclass});
ok($gone_oid =~ /^\d+$/ && $toast =~ /^pg_toast\./, "fixture: dangling OID $gone_oid, TOAST table $toast");

# --- pools: one SQL expression per line, of the type the pool is named for --
sub pool {
	my ($text) = @_;
	my @lines = grep { $_ ne '' && !/^-- / } map { s/^\s+|\s+$//gr } split /\n/, $text;
	s/\@GONE_OID\@/$gone_oid/g for @lines;
	s/\@TOAST\@/$toast/g for @lines;
	return \@lines;
}

my %type_pool;
$type_pool{text} = pool(<<'SQL');
NULL::text
NULL::text
''::text
' '::text
'x'::text
'default'::text
'fx_scope'::text
'fx_done_key'::text
repeat('x', 1048576)
repeat('é', 400000)
'it''s'::text
'"quoted"'::text
'a b  c'::text
'UPPER'::text
'MiXeD CaSe'::text
'semi;colon'::text
'''; DROP TABLE fx_plain; --'::text
'x'') OR true --'::text
E'back\\slash'::text
E'\\0 not a NUL'::text
E'new\nline\ttab\r'::text
'%s%s%n%d%%'::text
'ünïcødé 日本語 😀'::text
U&'\202E rtl \200B zero-width \FEFF bom'::text
repeat('n', 63)
repeat('n', 64)
repeat('ü', 40)
'$1'::text
'$$'::text
'?'::text
'NULL'::text
'-1'::text
'99999999999999999999999'::text
'2024-07-07'::text
'infinity'::text
'public.fx_plain'::text
'"Fx Odd ""Name"""'::text
chr(0)
convert_from('\xff'::bytea, 'UTF8')
SQL

my $sql_pool = pool(<<'SQL');
'SELECT * FROM fx_src'::text
'SELECT * FROM fx_src'::text
'SELECT * FROM fx_plain'::text
'TABLE fx_src'::text
'SELECT id, name, amount, v, deleted, loaded_at FROM fx_src WHERE id > 5'::text
'SELECT * FROM fx_src WHERE false'::text
'VALUES (1, ''a'')'::text
'SELECT 1 AS id'::text
'SELECT 1 AS one'::text
'SELECT ''2024-07-07''::date AS day, ''s9'' AS store, 9.0 AS amount'::text
'SELECT day, store, amount FROM fx_part WHERE day = ''2024-07-07'''::text
'SELECT * FROM fx_part'::text
'INSERT INTO fx_nokey VALUES (7, ''x'') RETURNING *'::text
'INSERT INTO fx_nokey VALUES (7, ''x'')'::text
'UPDATE fx_plain SET v = v + 1 RETURNING *'::text
'DELETE FROM fx_nokey RETURNING *'::text
'DELETE FROM fx_plain'::text
'CALL fx_proc()'::text
'DO $$BEGIN NULL; END$$'::text
'SELECT 1; SELECT 2'::text
'SELECT 1;'::text
'SELECT'::text
'SELECT FROM fx_plain'::text
'SELECT 1 AS a, 2 AS a'::text
'SELECT 1/0 AS boom'::text
'SELECT * FROM no_such_table'::text
'SELECT NULL'::text
'SELECT NULL::int AS id'::text
'SELEKT 1'::text
'/* unterminated'::text
'SELECT ''unterminated'::text
'COMMIT'::text
'ROLLBACK'::text
'BEGIN'::text
'SAVEPOINT s1'::text
'PREPARE TRANSACTION ''fx'''::text
'COPY fx_plain TO STDOUT'::text
'COPY fx_nokey FROM STDIN'::text
'VACUUM fx_plain'::text
'CREATE TABLE fx_new (a int)'::text
'DISCARD ALL'::text
'SET LOCAL work_mem = ''64kB'''::text
'SHOW search_path'::text
'EXPLAIN SELECT 1'::text
'LOCK TABLE fx_plain'::text
'NOTIFY fx_channel'::text
'SELECT repeat(''x'', 1048576) AS big'::text
'SELECT ''{"a": [1, null]}''::jsonb AS j, ROW(1, ''b'') AS r, ARRAY[1, NULL] AS arr, ''NaN''::float8 AS f'::text
'SELECT ''(1,2)''::point AS p, ''{"a": 1}''::json AS j'::text
'SELECT g AS id FROM generate_series(1, 1000) g'::text
'SELECT idem.claim(''nested'')'::text
'SELECT * FROM idem.merge_query(''fx_plain'', ''SELECT * FROM fx_src'')'::text
'SELECT idem.once(''nested'', ''SELECT 1 AS x'')'::text
'SELECT idem.checksum(''fx_plain'')'::text
'true'::text
'false'::text
'id > 2'::text
'id = 1 OR true'::text
'no_such_col = 1'::text
'1'::text
'('::text
'day = ''2024-07-07'''::text
'true) OR (true'::text
'now() IS NOT NULL'::text
'SELECT count(*) > 0 FROM idem_candidate'::text
'SELECT true'::text
'SELECT false'::text
'SELECT NULL::boolean'::text
'SELECT true, false'::text
'SELECT true UNION ALL SELECT true'::text
SQL

$type_pool{regclass} = pool(<<'SQL');
'fx_plain'::regclass
'fx_plain'::regclass
'fx_plain'::regclass
'fx_src'::regclass
'fx_src'::regclass
'fx_nokey'::regclass
'fx_part'::regclass
'fx_part'::regclass
'fx_part_0707'::regclass
'fx_part_default'::regclass
'fx_list'::regclass
'fx_multi'::regclass
'fx_hash'::regclass
'fx_view'::regclass
'fx_matview'::regclass
'fx_seq'::regclass
'fx_idx'::regclass
'fx_part_idx'::regclass
'fx_comp'::regclass
'fx_foreign'::regclass
'fx_temp'::regclass
'fx_unlogged'::regclass
'fx_gen'::regclass
'fx_json'::regclass
'fx_nocols'::regclass
'fx_dropped'::regclass
'"Fx Odd ""Name"""'::regclass
'fx_secret'::regclass
'fx_inh_parent'::regclass
'fx_pub'::regclass
'pg_class'::regclass
'pg_catalog.pg_proc'::regclass
'information_schema.tables'::regclass
'@TOAST@'::regclass
'pg_class_oid_index'::regclass
'idem.keys'::regclass
'idem.tombstones'::regclass
'idem.checkpoints'::regclass
0::oid::regclass
4294967295::oid::regclass
@GONE_OID@::oid::regclass
@GONE_OID@::oid::regclass
'idem.claim(text,text,text,boolean,interval)'::regprocedure::oid::regclass
NULL::regclass
NULL::regclass
'no_such_table'::regclass
SQL

$type_pool{'regclass[]'} = pool(<<'SQL');
NULL::regclass[]
'{}'::regclass[]
ARRAY['fx_plain']::regclass[]
ARRAY['fx_plain']::regclass[]
ARRAY['fx_plain', 'fx_src']::regclass[]
ARRAY['fx_plain', 'fx_plain']::regclass[]
ARRAY['fx_view', 'fx_part', 'fx_matview']::regclass[]
ARRAY[NULL]::regclass[]
ARRAY['fx_plain', NULL]::regclass[]
ARRAY[0::oid::regclass]
ARRAY[@GONE_OID@::oid::regclass]
ARRAY['fx_seq', 'fx_idx', 'fx_comp']::regclass[]
ARRAY['pg_class', 'idem.keys']::regclass[]
ARRAY['fx_temp', 'fx_nocols', 'fx_foreign', 'fx_secret']::regclass[]
'{{fx_plain},{fx_src}}'::regclass[]
'[5:5]={fx_plain}'::regclass[]
(SELECT array_agg('fx_plain'::regclass) FROM generate_series(1, 1000))
SQL

my $column_arrays = pool(<<'SQL');
NULL::text[]
'{}'::text[]
'{id}'::text[]
'{id}'::text[]
'{id}'::text[]
'{name}'::text[]
'{id,name}'::text[]
'{id,id}'::text[]
'{v}'::text[]
'{loaded_at}'::text[]
'{day}'::text[]
'{day,store}'::text[]
'{no_such_col}'::text[]
'{NULL}'::text[]
'{id,NULL}'::text[]
'{""}'::text[]
'{ctid}'::text[]
'{xmin,tableoid}'::text[]
'{ID}'::text[]
'{"Col; x"}'::text[]
'{UPPER}'::text[]
'{{id,name},{v,deleted}}'::text[]
'[0:1]={id,name}'::text[]
ARRAY[repeat('c', 1048576)]
array_fill('id'::text, ARRAY[10000])
SQL
$type_pool{'text[]'} = [
	@$column_arrays,
	@{pool(<<'SQL')} ];
(SELECT array_agg('k' || g) FROM generate_series(1, 5000) g)
ARRAY['a', 'a', 'b']
ARRAY['it''s', 'semi;colon', E'new\nline', '']
ARRAY['fx_done_key', 'fx_new_key', 'fx_leased_key']
SQL

$type_pool{boolean} = pool(<<'SQL');
NULL::boolean
true
true
false
false
SQL

$type_pool{integer} = pool(<<'SQL');
NULL::integer
0
1
2
2
3
-1
100
2147483647
-2147483648
SQL

$type_pool{bigint} = pool(<<'SQL');
NULL::bigint
0::bigint
1::bigint
-1::bigint
9223372036854775807::bigint
(-9223372036854775807 - 1)::bigint
SQL

$type_pool{interval} = pool(<<'SQL');
NULL::interval
'0'::interval
'1 microsecond'::interval
'1 second'::interval
'1 hour'::interval
'1 day'::interval
'1 day'::interval
'1 month'::interval
'-1 day'::interval
'-1 microsecond'::interval
'1 mon -30 days'::interval
'178000000 years'::interval
'-178000000 years'::interval
'2147483647 days 2147483647 months'::interval
'-2147483648 days'::interval
make_interval(secs => 1e15)
SQL

$type_pool{'timestamp with time zone'} = pool(<<'SQL');
NULL::timestamptz
NULL::timestamptz
'2024-07-07 00:00+00'::timestamptz
'2026-01-01 00:00+00'::timestamptz
'infinity'::timestamptz
'-infinity'::timestamptz
'294276-12-31 23:59:59.999999+00'::timestamptz
'4713-01-01 00:00+00 BC'::timestamptz
SQL

$type_pool{jsonb} = pool(<<'SQL');
NULL::jsonb
'null'::jsonb
'{}'::jsonb
'[]'::jsonb
'1'::jsonb
'"s"'::jsonb
'{"a": [1, {"b": null}], "": "", "k\u00fc": 1e300}'::jsonb
('{"k": "' || repeat('x', 1048576) || '"}')::jsonb
(repeat('[', 200) || repeat(']', 200))::jsonb
(repeat('[', 100000) || repeat(']', 100000))::jsonb
SQL

$type_pool{'jsonb[]'} = pool(<<'SQL');
NULL::jsonb[]
'{}'::jsonb[]
ARRAY['{}'::jsonb]
ARRAY[NULL::jsonb]
ARRAY['{"id": 1}', '[]']::jsonb[]
SQL

$type_pool{'uuid[]'} = pool(<<'SQL');
NULL::uuid[]
'{}'::uuid[]
ARRAY['00000000-0000-0000-0000-000000000000']::uuid[]
ARRAY[NULL]::uuid[]
ARRAY['00000000-0000-0000-0000-000000000001', 'ffffffff-ffff-ffff-ffff-ffffffffffff']::uuid[]
SQL

# idem._key_repeats's repeated key hashes (merge's and append's tops).
$type_pool{'bigint[]'} = pool(<<'SQL');
NULL::bigint[]
'{}'::bigint[]
ARRAY[1, 2, 3]::bigint[]
ARRAY[NULL, 7]::bigint[]
ARRAY[-9223372036854775808, 9223372036854775807]::bigint[]
'{{1,2},{3,4}}'::bigint[]
'[5:6]={1,2}'::bigint[]
(SELECT pg_catalog.array_agg(g) FROM pg_catalog.generate_series(1, 10000) g)::bigint[]
SQL

$type_pool{regrole} = pool(<<'SQL');
NULL::regrole
'fuzz_user'::regrole
'fuzz_user'::regrole
'postgres'::regrole
'pg_monitor'::regrole
'"fx odd ""role"""'::regrole
0::oid::regrole
4294967295::oid::regrole
'no_such_role'::regrole
SQL

$type_pool{record} = pool(<<'SQL');
ROW(1, 'a')
ROW()
NULL::record
ROW(NULL, NULL)
ROW(repeat('x', 1048576))
ROW(1, 'a')::fx_comp
ROW(ROW(1, ROW(2)), ARRAY[ROW(1, 'a')::fx_comp])
(SELECT p FROM fx_plain p WHERE id = 1)
(SELECT j FROM fx_json j WHERE id = 1)
(SELECT d FROM fx_dropped d)
(SELECT n FROM fx_nocols n)
SQL

# idem._digest_agg(VARIADIC "any"): one column per argument, of any kind
# (an untyped literal arrives as unknown, a cstring).
$type_pool{'"any"'} = pool(<<'SQL');
1
NULL::int
NULL
'text'
repeat('x', 1048576)
ROW(1, 'a')
ARRAY[1, NULL]
'2024-07-07'::date
(SELECT p FROM fx_plain p WHERE id = 1)
SQL

# Bound parameters (idem.query_params): NULL, none, well-formed, a value
# its type refuses, arrays of different lengths, a NULL type, a type that
# does not exist as an OID, a huge value.
$type_pool{'idem.query_params'} = pool(<<'SQL');
NULL::idem.query_params
idem.params()
idem.params(1)
idem.params(1, 'x'::text, '2024-07-07'::date, NULL::int)
ROW('{int4}', '{not-a-number}')::idem.query_params
ROW('{int4,text}', '{1}')::idem.query_params
ROW('{NULL}', '{1}')::idem.query_params
ROW(ARRAY[4294967295::oid::regtype], '{1}')::idem.query_params
ROW(NULL, '{1}')::idem.query_params
ROW('{text}', ARRAY[repeat('x', 1048576)])::idem.query_params
ROW('{int4}', '{{1},{2}}')::idem.query_params
SQL

# The aggregate's support functions take internal, which SQL cannot make:
# every call is refused (42883 or 42846) before it runs.
$type_pool{internal} = pool(<<'SQL');
NULL
NULL::internal
SQL
$type_pool{bytea} = pool(<<'SQL');
'\x00'::bytea
'\x'::bytea
NULL::bytea
SQL

# anyelement: one family of values per call, so that several anyelement
# arguments of a call agree (a mix is tried too).
my %family = (
	bigint => pool(<<'SQL'),
NULL::bigint
0::bigint
1::bigint
7::bigint
100::bigint
101::bigint
-1::bigint
9223372036854775807::bigint
(-9223372036854775807 - 1)::bigint
SQL
	integer => pool(<<'SQL'),
NULL::integer
0
1
5
-1
2147483647
-2147483648
SQL
	numeric => pool(<<'SQL'),
NULL::numeric
0::numeric
1.5::numeric
2::numeric
-1::numeric
'NaN'::numeric
'Infinity'::numeric
'-Infinity'::numeric
('1e' || 10000)::numeric
0.0000000000000000000000000001::numeric
SQL
	float8 => pool(<<'SQL'),
'NaN'::float8
'-0'::float8
'0'::float8
'Infinity'::float8
1e308::float8
5e-324::float8
SQL
	date => pool(<<'SQL'),
NULL::date
'2024-07-07'::date
'2024-07-07'::date
'2024-07-08'::date
'2025-01-01'::date
'infinity'::date
'-infinity'::date
'4713-01-01 BC'::date
'5874897-12-31'::date
SQL
	timestamptz => pool(<<'SQL'),
NULL::timestamptz
'2024-07-07 00:00+00'::timestamptz
'2024-07-08 12:00+02'::timestamptz
'infinity'::timestamptz
'-infinity'::timestamptz
'294276-12-31 23:59:59.999999+00'::timestamptz
'4713-01-01 00:00+00 BC'::timestamptz
SQL
	timestamp => pool(<<'SQL'),
NULL::timestamp
'2024-07-07 00:00'::timestamp
'infinity'::timestamp
'-infinity'::timestamp
'294276-12-31 23:59:59.999999'::timestamp
SQL
	text => $type_pool{text},
	pg_lsn => pool(<<'SQL'),
'0/0'::pg_lsn
'0/16B3748'::pg_lsn
'FFFFFFFF/FFFFFFFF'::pg_lsn
NULL::pg_lsn
SQL
	interval => pool(<<'SQL'),
'1 day'::interval
'-1 day'::interval
'0'::interval
'178000000 years'::interval
SQL
	other => pool(<<'SQL'),
true
'00000000-0000-0000-0000-000000000000'::uuid
'{"a": 1}'::jsonb
'[1,5)'::int4range
'empty'::int4range
'10.0.0.1'::inet
'\x00ff'::bytea
'(1,2)'::point
'1'::xid
'{1,NULL}'::int[]
'{}'::int[]
ROW(1, 'a')
ROW(1, 'a')::fx_comp
'happy'::fx_mood
5::fx_posint
'a'::"char"
'abc'::name
0::oid
'1.00'::money
'a b'::tsvector
repeat('x', 1048576)::bytea
NULL
SQL
);
my @families = sort keys %family;

# Pools by argument name ("function.argument" first, then "argument/type").
my $column_names = pool(<<'SQL');
NULL::text
'id'::text
'name'::text
'v'::text
'v'::text
'deleted'::text
'deleted'::text
'amount'::text
'loaded_at'::text
'day'::text
'no_such_col'::text
'ID'::text
'"id"'::text
''::text
'ctid'::text
'xmin'::text
'tableoid'::text
'Col; x'::text
repeat('c', 1048576)
SQL
my $job_names = pool(<<'SQL');
'fx_job_bigint'::text
'fx_job_date'::text
'fx_job_ts'::text
'fx_job_text'::text
'fx_job_lsn'::text
'fx_job_numeric'::text
'fx_job_windowed'::text
'fx_new_job'::text
SQL
my $key_names = pool(<<'SQL');
'fx_done_key'::text
'fx_leased_key'::text
'fx_once_key'::text
'fx_scoped_key'::text
'fx_new_key'::text
'default'::text
'fx_scope'::text
SQL
my $datasets = pool(<<'SQL');
'public.fx_pub'::text
'public.fx_pub'::text
'fx_pub'::text
'public.fx_ds'::text
'fx_ds'::text
'public.fx_view'::text
'fx_plain'::text
'fx_seq'::text
'pg_catalog.pg_class'::text
'idem.keys'::text
'no_such_schema.ds'::text
'public.'::text
'.ds'::text
'a.b.c'::text
'"Odd Name"'::text
'public."x""y"'::text
'public.fx_pub; DROP TABLE fx_plain'::text
repeat('d', 100)
SQL
my %name_pool = (
	'query/text'          => $sql_pool,
	'sql/text'            => $sql_pool,
	'predicate/text'      => $sql_pool,
	'audit/text'          => $sql_pool,
	'delete_scope/text'   => $sql_pool,
	'assert_rerun_safe.job' => $sql_pool,
	'job/text'            => $job_names,
	'key/text'            => $key_names,
	'scope/text'          => $key_names,
	'fingerprint/text'    => $key_names,
	'recovery_point/text' => $key_names,
	'dataset/text'        => $datasets,
	'version_column/text' => $column_names,
	'delete_column/text'  => $column_names,
	'key/text[]'          => $column_arrays,
	'columns/text[]'      => $column_arrays,
	'exclude_columns/text[]' => $column_arrays,
	'mode/text' => pool(<<'SQL'),
'rewrite'::text
'rewrite'::text
'swap'::text
'REWRITE'::text
'bogus'::text
''::text
NULL::text
SQL
	# Not 'loop': it repeats its statement until that fails, on purpose.
	'action/text' => pool(<<'SQL'),
'destructed'::text
'throw'::text
'bad_alloc'::text
'user_error'::text
'run'::text
'run'::text
SQL
	'code/text' => pool(<<'SQL'),
'22023'::text
'P0001'::text
'ID001'::text
'00000'::text
'01000'::text
'02000'::text
'no_such_condition'::text
'division_by_zero'::text
SQL
	'version/integer' => pool(<<'SQL'),
1
2
3
0
-1
NULL::integer
2147483647
SQL
	'overwrite_partition.value/text' => pool(<<'SQL'),
'2024-07-07'::text
'2024-07-08'::text
'2025-01-01'::text
'a'::text
'it''s'::text
'infinity'::text
''::text
'not a date'::text
NULL::text
SQL
);

# Untyped literals and values of another type: errors of the call itself
# (function resolution, input syntax), which must be clear too.
my $untyped = pool(<<'SQL');
NULL
'abc'
''
'1'
'{}'
1
SQL
my @all_typed = map { @{ $type_pool{$_} } } sort keys %type_pool;

sub pick { my ($list) = @_; return $list->[ int(rand(scalar @$list)) ]; }

# Values that fit together into a valid call, so that a good share of the
# calls get past the argument checks into the work itself.
my %valid = (
	'merge.target'            => [q{'fx_plain'::regclass}],
	'merge.source'            => [q{'fx_src'::regclass}, q{'fx_view'::regclass}],
	'merge.key'               => [q{'{id}'::text[]}],
	'merge.version_column'    => [q{'v'::text}],
	'merge.delete_column'     => [q{'deleted'::text}],
	'merge.columns'           => [q{'{name,amount}'::text[]}],
	'merge.delete_scope'      => [q{'id > 2'::text}],
	'merge_query.target'      => [q{'fx_plain'::regclass}],
	'merge_query.query'       => [q{'SELECT * FROM fx_src'::text}, q{'SELECT id, name FROM fx_src WHERE id > 6'::text}],
	'merge_query.key'         => [q{'{id}'::text[]}],
	'merge_query.version_column' => [q{'v'::text}],
	'merge_query.delete_column'  => [q{'deleted'::text}],
	'diff.a'                  => [q{'fx_plain'::regclass}, q{'fx_view'::regclass}],
	'diff.b'                  => [q{'fx_src'::regclass}, q{'fx_matview'::regclass}],
	'diff.exclude_columns'    => [q{'{loaded_at}'::text[]}],
	'checksum.rel'            => [q{'fx_plain'::regclass}, q{'fx_part'::regclass}],
	'replace_where.target'    => [q{'fx_plain'::regclass}],
	'replace_where.predicate' => [q{'id > 5'::text}, q{'v = 1'::text}],
	'replace_where.query'     => [q{'SELECT * FROM fx_src WHERE id > 5'::text}, q{'SELECT * FROM fx_plain WHERE v = 1'::text}],
	'overwrite_partition.parent' => [q{'fx_part'::regclass}],
	'overwrite_partition.value'  => [q{'2024-07-07'::date}, q{'2024-07-07'::text}],
	'overwrite_partition.query'  => [q{'SELECT day, store, amount FROM fx_part WHERE day = ''2024-07-07'''::text},
		q{'SELECT ''2024-07-07''::date AS day, ''s9'' AS store, 9.0 AS amount'::text}],
	'overwrite_partition.mode'   => [q{'rewrite'::text}],
	'assert_rerun_safe.job'      => [q{'SELECT 1'::text}, q{'DELETE FROM fx_plain WHERE id = 1'::text},
		q{'INSERT INTO fx_nokey VALUES (9, ''z'')'::text}],
	'assert_rerun_safe.tables'   => [q{ARRAY['fx_plain']::regclass[]}, q{ARRAY['fx_plain', 'fx_nokey']::regclass[]}],
	'assert_rerun_safe.runs'     => [q{2}, q{3}],
	'publish.dataset'         => [q{'public.fx_ds'::text}, q{'public.fx_pub'::text}],
	'publish.query'           => [q{'SELECT * FROM fx_src'::text}, q{'SELECT 1 AS one'::text}],
	'publish.keep'            => [q{1}, q{5}],
	'rollback.dataset'        => [q{'public.fx_pub'::text}],
	'versions.dataset'        => [q{'public.fx_pub'::text}],
	'pin.dataset'             => [q{'public.fx_pub'::text}],
	'pin.version'             => [q{1}, q{2}],
	'save_point.key'          => [q{'fx_leased_key'::text}],
	'complete.key'            => [q{'fx_leased_key'::text}],
	'gaps.job'                => [q{'fx_new_job'::text}, q{'fx_job_windowed'::text}],
	'gaps.from_value'         => [q{'2024-07-01'::date}],
	# Dates, but far ones: a series of windows up to 'infinity' never ends,
	# so gaps must refuse it or stop at its limit, not run until cancelled.
	'gaps.to_value'           => [q{'2024-07-10'::date}, q{'infinity'::date}, q{'5874897-12-31'::date}],
	'gaps.step'               => [q{'1 day'::interval}],
	'mark_window.lo'          => [q{'2024-07-02'::date}],
	'mark_window.hi'          => [q{'2024-07-03'::date}],
	'mark_window.job'         => [q{'fx_new_job'::text}],
	'advance.job'             => [q{'fx_new_job'::text}],
	'rewind.job'              => [q{'fx_new_job'::text}],
	'run_once.job'            => [q{'fx_new_job'::text}],
	'run_once.query'          => [q{'INSERT INTO fx_nokey VALUES (9, ''z'')'::text}, q{'SELECT 1'::text}],
	'once.query'              => [q{'SELECT 1 AS one'::text}, q{'SELECT * FROM fx_src'::text}],
	'_from_canonical.value'   => [q{'1'::text}, q{'2024-07-07'::text}, q{'2024-07-07 00:00:00+00'::text}],
	'_tombstones_put.target'  => [q{'fx_plain'::regclass}],
);

sub gen_arg {
	my ($fn, $arg, $fam, $lean_valid) = @_;
	my $r = rand();
	return pick($untyped) if $r < 0.03;
	return pick(\@all_typed) if $r < 0.06;
	my $valid = $valid{"$fn.$arg->{name}"};
	return pick($valid) if $valid && rand() < ($lean_valid ? 0.85 : 0.1);
	if ($arg->{type} eq 'anyelement') {
		$fam = $families[ int(rand(@families)) ] if rand() < 0.15;
		return pick($family{$fam});
	}
	my $named = $name_pool{"$fn.$arg->{name}"} // $name_pool{"$arg->{name}/$arg->{type}"};
	return pick($named) if $named && rand() < 0.65;
	return pick($type_pool{ $arg->{type} });
}

sub gen_call {
	my ($f) = @_;
	my @args = @{ $f->{args} };
	my $nreq = @args - $f->{ndefaults};
	my $fam = $families[ int(rand(@families)) ];
	# A third of the calls lean towards a valid call, with a few bad
	# arguments mixed in: they reach deeper than a call refused at once.
	my $lean_valid = rand() < 0.35;
	my @parts;
	if (@args && rand() < 0.25) {
		# Named notation: the required arguments and some optional ones, in
		# any order.
		my @chosen = grep { $_ < $nreq || rand() < 0.5 } 0 .. $#args;
		for (my $i = @chosen - 1; $i > 0; $i--) {
			my $j = int(rand($i + 1));
			@chosen[ $i, $j ] = @chosen[ $j, $i ];
		}
		@parts = map { qq{"$args[$_]{name}" => } . gen_arg($f->{name}, $args[$_], $fam, $lean_valid) } @chosen;
	}
	else {
		my $n = $nreq + int(rand($f->{ndefaults} + 1));
		@parts = map { gen_arg($f->{name}, $args[$_], $fam, $lean_valid) } 0 .. $n - 1;
	}
	my $call = qq{idem."$f->{name}"(} . join(', ', @parts) . ')';
	# Both call sites: FROM (a function scan) and the target list.
	return rand() < 0.7 ? "SELECT * FROM $call" : "SELECT $call";
}

# --- the functions, from the catalog ------------------------------------------
my %known_type = map { $_ => 1 } (keys %type_pool, 'anyelement');
my @functions;
{
	my $rows = $node->safe_psql('fuzz', q{
SELECT p.proname, p.oid::regprocedure, p.pronargdefaults,
       coalesce(array_to_string(p.proargnames[1:p.pronargs], ','), ''),
       coalesce((SELECT string_agg(format_type(t, NULL), ',' ORDER BY o)
                   FROM unnest(p.proargtypes) WITH ORDINALITY AS u(t, o)), '')
  FROM pg_proc p
 WHERE p.pronamespace = 'idem'::regnamespace
 ORDER BY p.oid::regprocedure::text COLLATE "C"});
	for my $line (split /\n/, $rows) {
		my ($name, $sig, $ndef, $names, $types) = split /\|/, $line, -1;
		my @n = split /,/, $names, -1;
		my @t = split /,/, $types, -1;
		push @functions, {
			name => $name, sig => $sig, ndefaults => $ndef,
			args => [ map { { name => $n[$_] // "arg$_", type => $t[$_] } } 0 .. $#t ] };
	}
}
ok(@functions >= 40, scalar(@functions) . ' functions in schema idem');
my @untyped_args = map { my $f = $_; map { "$f->{sig}: $_->{name} $_->{type}" } grep { !$known_type{ $_->{type} } } @{ $f->{args} } } @functions;
is_deeply(\@untyped_args, [], 'every argument type of every idem function has a pool');
@functions = grep { $_->{name} =~ /$only/ } @functions if defined $only;

my @calls;
for my $f (@functions) {
	push @calls, { fn => $f->{name}, sql => gen_call($f), as_user => rand() < 0.25 } for 1 .. $calls_per_function;
}
for (my $i = @calls - 1; $i > 0; $i--) {    # interleave the functions
	my $j = int(rand($i + 1));
	@calls[ $i, $j ] = @calls[ $j, $i ];
}

# --- the driver ----------------------------------------------------------------
my $dsn = 'dbi:Pg:host=' . $node->host . ';port=' . $node->port . ';dbname=fuzz';
my $dbh;

sub session_connect {
	my $deadline = time + 60;
	while (1) {
		$dbh = DBI->connect($dsn, 'postgres', '', { AutoCommit => 1, RaiseError => 0, PrintError => 0, PrintWarn => 0, pg_enable_utf8 => 0 });
		last if $dbh;
		die "cannot reconnect: $DBI::errstr" if time > $deadline;
		usleep(200_000);
	}
	for my $s ("SET statement_timeout = $statement_timeout_ms", "SET lock_timeout = '2s'",
		'SET client_min_messages = error',
		'CREATE TEMP TABLE fx_temp (id int PRIMARY KEY, name text)',
		q{INSERT INTO fx_temp VALUES (1, 'temp')})
	{
		$dbh->do($s) or die "session setup ($s): " . $dbh->errstr;
	}
}

sub alive {
	my $sth = $dbh->prepare('SELECT 41 + 1', { pg_direct => 1 });
	return 0 unless $sth && $sth->execute;
	my ($v) = $sth->fetchrow_array;
	return defined $v && $v == 42;
}

# Runs one statement in a rolled-back transaction; returns
# { state => SQLSTATE or '', message => primary message, died => bool }.
sub run_one {
	my ($sql, $as_user) = @_;
	$dbh->do('BEGIN') or return { died => !alive(), state => $dbh->state, message => 'BEGIN failed: ' . $dbh->errstr };
	$dbh->do('SET LOCAL ROLE fuzz_user') if $as_user;
	my $sth = $dbh->prepare($sql, { pg_direct => 1 });
	my $ok = $sth && $sth->execute;
	my %r = (state => '', message => '');
	if ($ok) {
		$sth->fetchall_arrayref;
		$r{rows} = $sth->rows;
	}
	else {
		$r{state} = $dbh->state // '';
		my $err = $dbh->errstr // '';
		$r{full} = $err;
		$r{message} = $err =~ /^(?:ERROR|FATAL|PANIC):[ \t]*(.*)$/m ? $1 : $err;
	}
	$dbh->do('ROLLBACK');
	$r{died} = !alive();
	return \%r;
}

session_connect();

sub short { my ($s) = @_; return length($s) > 400 ? substr($s, 0, 400) . '...' : $s; }

# --- deterministic refusals the contract promises -------------------------------
# [call, role or undef, SQLSTATE, message pattern]
my @refusals = (
	[ q{SELECT idem.checksum(NULL)}, undef, '22004', qr/^rel must not be NULL$/ ],
	[ q{SELECT idem.checksum('fx_plain', '{NULL}')}, undef, '22004', qr/^exclude_columns must not contain NULL elements$/ ],
	[ q{SELECT idem.checksum('fx_seq')}, undef, '42809', qr/fx_seq/ ],
	[ q{SELECT idem.checksum_query('')}, undef, '22023', qr/^query must be a single statement that returns rows$/ ],
	[ q{SELECT idem.checksum_query('SELECT 1; SELECT 2')}, undef, '22023', qr/single statement/ ],
	[ q{SELECT * FROM idem.diff('fx_plain', 'fx_src', max_rows => -1)}, undef, '22023', qr/^max_rows must not be negative$/ ],
	[ q{SELECT * FROM idem.diff('fx_plain', NULL)}, undef, '22004', qr/^b must not be NULL$/ ],
	[ q{SELECT * FROM idem.merge(NULL, 'fx_src')}, undef, '22004', qr/^target must not be NULL$/ ],
	[ q{SELECT * FROM idem.merge('fx_plain', 'fx_src', key => '{}')}, undef, '22023', qr/^key must name at least one column$/ ],
	[ q{SELECT * FROM idem.merge('fx_plain', 'fx_src', key => '{id,NULL}')}, undef, '22004', qr/^key must not contain NULL elements$/ ],
	[ q{SELECT * FROM idem.merge('fx_plain', 'fx_src', dry_run => NULL)}, undef, '22004', qr/^dry_run must not be NULL$/ ],
	[ q{SELECT * FROM idem.merge_query('fx_plain', 'SELECT 1 AS id, 2 AS no_such_col')}, undef, '42703', qr/no_such_col/ ],
	[ q{SELECT * FROM idem.merge_query('fx_plain', 'SELECT * FROM fx_src WHERE false', delete_missing => true)}, undef, '22023', qr/source is empty/ ],
	[ q{SELECT * FROM idem.merge_query('fx_plain', 'SELECT NULL::int AS id')}, undef, '23502', qr/./ ],
	[ q{SELECT * FROM idem.snapshot('fx_plain', 'fx_src', NULL)}, undef, '22004', qr/^key must not be NULL$/ ],
	[ q{SELECT * FROM idem.snapshot('fx_plain', 'fx_src', '{id}')}, undef, '42703', qr/valid_from/ ],
	[ q{SELECT idem.snapshot_prepare('fx_view', '{id}')}, undef, '42809', qr/is not a table/ ],
	[ q{SELECT idem.claim(NULL)}, undef, '22004', qr/^key must not be NULL$/ ],
	[ q{SELECT idem.claim('')}, undef, '22023', qr/^key must not be empty$/ ],
	[ q{SELECT idem.claim('k', wait => NULL)}, undef, '22004', qr/^wait must not be NULL$/ ],
	[ q{SELECT idem.claim('k', lease => '-1 second')}, undef, '22023', qr/^lease must be a positive interval$/ ],
	[ q{SELECT idem.claim('fx_done_key', fingerprint => 'other')}, undef, 'ID001', qr/different request/ ],
	[ q{SELECT idem.claim_many('{a,NULL}')}, undef, '22004', qr/^keys must not contain NULL elements$/ ],
	[ q{SELECT idem.once('k', NULL)}, undef, '22004', qr/^query must not be NULL$/ ],
	[ q{SELECT idem.complete('never_claimed')}, undef, '55000', qr/never claimed/ ],
	[ q{SELECT idem.purge_keys(NULL)}, undef, '22004', qr/^older_than must not be NULL$/ ],
	[ q{SELECT idem.purge_history(NULL)}, undef, '22004', qr/^older_than must not be NULL$/ ],
	[ q{SELECT idem.purge_history('-1 second')}, undef, '22023', qr/^older_than must not be negative$/ ],
	[ q{SELECT idem.advance('fx_job_bigint', NULL::bigint)}, undef, '22004', qr/^watermark must not be NULL$/ ],
	[ q{SELECT idem.advance('fx_job_bigint', 99::bigint)}, undef, '22023', qr/would move backwards/ ],
	[ q{SELECT idem.advance('fx_job_bigint', '2024-07-07'::date)}, undef, '42804', qr/./ ],
	[ q{SELECT idem.advance('', 1::bigint)}, undef, '22023', qr/^job must not be empty$/ ],
	[ q{SELECT idem.watermark('fx_job_bigint', NULL::date)}, undef, '42804', qr/./ ],
	[ q{SELECT idem.lock_job('fx_job_bigint', nowait => false, wait => false)}, undef, '22023', qr/^wait and nowait contradict each other$/ ],
	[ q{SELECT idem.mark_window('fx_new_job', 5, 1)}, undef, '22023', qr/^a window needs lo < hi$/ ],
	[ q{SELECT * FROM idem.gaps('fx_new_job', 1::bigint, 10::bigint, 0::bigint)}, undef, '22023', qr/^step must be positive$/ ],
	[ q{SELECT * FROM idem.gaps('fx_new_job', 1::bigint, 10::bigint, NULL::bigint)}, undef, '22004', qr/^step must not be NULL$/ ],
	[ q{SELECT idem.publish('public.fx_pub', 'SELECT 1', keep => 0)}, undef, '22023', qr/^keep must be at least 1$/ ],
	[ q{SELECT idem.publish(NULL, 'SELECT 1')}, undef, '22004', qr/^dataset must not be NULL$/ ],
	[ q{SELECT idem.publish('public.fx_ds', 'SELECT 1 AS one', audit => 'SELECT false')}, undef, '23514', qr/./ ],
	[ q{SELECT idem.rollback('public.fx_pub', 99)}, undef, '55000', qr/has no version 99/ ],
	[ q{SELECT idem.pin('public.fx_pub', NULL)}, undef, '22004', qr/^version must not be NULL$/ ],
	[ q{SELECT * FROM idem.replace_where('fx_plain', NULL, 'SELECT * FROM fx_plain')}, undef, '22004', qr/^predicate must not be NULL$/ ],
	[ q{SELECT * FROM idem.replace_where('fx_plain', 'id = 1', 'SELECT * FROM fx_plain WHERE id = 2')}, undef, '23514', qr/./ ],
	[ q{SELECT * FROM idem.assert_rerun_safe(NULL, '{fx_plain}')}, undef, '22004', qr/^job must not be NULL$/ ],
	[ q{SELECT * FROM idem.assert_rerun_safe('SELECT 1', '{fx_plain,NULL}')}, undef, '22004', qr/^tables must not contain NULL elements$/ ],
	[ q{SELECT idem.purge_tombstones(NULL, NULL)}, undef, '22004', qr/^target and older_than must not be NULL$/ ],
	[ q{SELECT idem.grant_usage(NULL)}, undef, '22004', qr/^role must not be NULL$/ ],
	[ q{SELECT idem._boundary_probe('destructed')}, 'fuzz_user', '42501', qr/permission denied for function _boundary_probe/ ],
	[ q{SELECT idem.grant_usage('fuzz_user')}, 'fuzz_user', '42501', qr/permission denied for function grant_usage/ ],
	[ q{SELECT idem.checksum('fx_secret')}, 'fuzz_user', '42501', qr/permission denied for table fx_secret/ ],
	[ q{SELECT idem.claim('k', 'not_granted_scope')}, 'fuzz_user', '42501', qr/./ ],
);
for my $c (@refusals) {
	my ($sql, $role, $state, $re) = @$c;
	my $r = run_one($sql, defined $role);
	ok(!$r->{died} && $r->{state} eq $state && $r->{message} =~ $re,
		"refused with $state: $sql" . (defined $role ? " (as $role)" : ''))
	  or diag("got SQLSTATE '$r->{state}': " . short($r->{full} // 'no error'));
	session_connect() if $r->{died};
}

# --- state before ---------------------------------------------------------------
my $state_sql = q{
SELECT string_agg(t || '=' || h, E'\n' ORDER BY t) FROM (
  SELECT 'idem.keys' AS t, md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) AS h FROM idem.keys x
  UNION ALL SELECT 'idem.tombstones', md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM idem.tombstones x
  UNION ALL SELECT 'idem.checkpoints', md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM idem.checkpoints x
  UNION ALL SELECT 'idem.checkpoint_log', md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM idem.checkpoint_log x
  UNION ALL SELECT 'idem.windows', md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM idem.windows x
  UNION ALL SELECT 'idem.datasets', md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM idem.datasets x
  UNION ALL SELECT 'idem.dataset_versions', md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM idem.dataset_versions x
  UNION ALL SELECT 'idem.usage_grant_rows', md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM idem.usage_grant_rows x
  UNION ALL SELECT 'idem.run_log', md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM idem.run_log x
  UNION ALL SELECT 'fx_plain', md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM fx_plain x
  UNION ALL SELECT 'fx_src', md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM fx_src x
  UNION ALL SELECT 'fx_nokey', md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM fx_nokey x
  UNION ALL SELECT 'fx_part', md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM fx_part x
  UNION ALL SELECT 'relations', md5(string_agg(c.oid::regclass::text || ':' || c.relkind::text || ':' || coalesce(c.relacl::text, ''), ',' ORDER BY c.oid))
    FROM pg_class c WHERE c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'pg_toast'::regnamespace, 'information_schema'::regnamespace)
      AND c.relpersistence <> 't'
  UNION ALL SELECT 'idem functions', md5(string_agg(p.oid::regprocedure::text || coalesce(p.proacl::text, ''), ',' ORDER BY p.oid))
    FROM pg_proc p WHERE p.pronamespace = 'idem'::regnamespace
  UNION ALL SELECT 'roles', md5(string_agg(r.rolname, ',' ORDER BY r.rolname)) FROM pg_roles r
  UNION ALL SELECT 'prepared xacts', count(*)::text FROM pg_prepared_xacts
) s};
my $state_before = $node->safe_psql('fuzz', $state_sql);

# --- judging one outcome ------------------------------------------------------------
# Returns '' for a clean outcome (a result, or a clear refusal), 'allowed'
# for an outcome in @ALLOWANCES, or the name of the problem.
sub judge {
	my ($fn, $sql, $r, $use_allowances) = @_;
	return 'died' if $r->{died};
	return '' if $r->{state} eq '';
	if ($use_allowances) {
		return 'allowed' if grep { $_->{fn} eq $fn && $_->{state} eq $r->{state} && $sql =~ $_->{sql} } @ALLOWANCES;
	}
	# Messages arrive as bytes (pg_enable_utf8 => 0): a text cut in the
	# middle of a character reaches the client as invalid UTF-8.
	my $decoded = $r->{full};
	return 'invalid UTF-8 in the error' unless utf8::decode($decoded);
	return 'timeout' if ($r->{state} eq '57014' && $r->{message} =~ /statement timeout/) || $r->{state} eq '53400';
	my $class = substr($r->{state}, 0, 2);
	return 'internal error' if $class eq 'XX';
	return 'internal-looking message'
	  if $r->{message} =~ /cache lookup failed|could not open relation with OID/i
	  || ($r->{message} =~ /unrecognized/i && !grep { $r->{message} =~ $_ } @ALLOWED_UNRECOGNIZED);
	# _raise raises the SQLSTATE and message its caller chose.
	return '' if $fn eq '_raise';
	return 'empty message' if $r->{message} !~ /\S/;
	return 'SQLSTATE outside the allowed classes' if !$allowed_class{$class} || length($r->{state}) != 5;
	return '';
}

# Controls: the judge and the driver do catch each kind of problem (real
# calls that produce them on purpose), so a quiet run means something.
for my $control (
	[ q{SELECT idem._boundary_probe('throw')}, 'internal error' ],
	[ q{SELECT idem._raise('22023', 'cache lookup failed for relation 1', NULL, NULL)}, 'internal-looking message' ],
	[ q{SELECT idem._raise('22023', '', NULL, NULL)}, 'empty message' ],
	[ q{SELECT idem._raise('58000', 'a system error', NULL, NULL)}, 'SQLSTATE outside the allowed classes' ],
	[ q{SELECT pg_sleep(60)}, 'timeout' ],
	[ q{SELECT pg_terminate_backend(pg_backend_pid())}, 'died' ])
{
	my ($sql, $want) = @$control;
	$dbh->do('SET statement_timeout = 300');    # the sleep need not wait 5 s
	my $r = run_one($sql, 0);
	is(judge('control', $sql, $r, 0), $want, "control: $sql is judged '$want'");
	if ($r->{died}) { session_connect(); }
	else { $dbh->do("SET statement_timeout = $statement_timeout_ms"); }
}
# No call produces invalid UTF-8 on purpose: judge a message cut inside 'é'.
is(judge('control', '', { state => '55000', message => "key \"\xc3...\"", full => "ERROR:  key \"\xc3...\"" }, 0),
	'invalid UTF-8 in the error', 'control: a message cut inside a character is judged invalid UTF-8');

# --- the fuzz run --------------------------------------------------------------------
my (%by_fn, %outcomes, %problems);
my %allowed_seen;
my @slowest;    # the three slowest calls: how close they come to the timeout
my $started = time;
my $ran = 0;
for my $c (@calls) {
	if (time - $started > $budget_seconds) {
		fail("the fuzz run stays within its budget of $budget_seconds s");
		diag("stopped after $ran of " . scalar(@calls) . ' calls');
		last;
	}
	my $t0 = time;
	my $r = run_one($c->{sql}, $c->{as_user});
	push @slowest, [ time - $t0, $c->{sql} ];
	@slowest = (sort { $b->[0] <=> $a->[0] } @slowest)[ 0 .. ($#slowest < 2 ? $#slowest : 2) ];
	$ran++;
	my $fn = $c->{fn};
	my $who = $c->{as_user} ? ' [as fuzz_user]' : '';
	$by_fn{$fn}{calls}++;
	note(($r->{died} ? 'DIED' : $r->{state} || 'ok') . ": $c->{sql}$who" . ($r->{state} ? "\n    " . short($r->{message}) : ''))
	  if $ENV{FUZZ_VERBOSE};
	$outcomes{ $r->{died} ? 'died' : $r->{state} || 'ok' }++;
	$by_fn{$fn}{ok}++ if !$r->{died} && $r->{state} eq '';
	my $verdict = judge($fn, $c->{sql}, $r, 1);
	if ($verdict eq 'allowed') {
		my ($allow) = grep { $_->{fn} eq $fn && $_->{state} eq $r->{state} && $c->{sql} =~ $_->{sql} } @ALLOWANCES;
		$allowed_seen{ $allow->{why} }++;
	}
	elsif ($verdict eq 'died') {
		push @{ $problems{died} }, "$c->{sql}$who\n    last error: " . short($r->{full} // '');
		session_connect();
	}
	elsif ($verdict ne '') {
		push @{ $problems{$verdict} }, "$r->{state}: " . short($r->{message}) . "\n    call: " . short($c->{sql}) . $who;
	}
}
my $elapsed = time - $started;

# Grouped by function, SQLSTATE and message shape, so one bug reads as one line.
sub report {
	my ($title, $list) = @_;
	my %groups;
	for my $w (@$list) {
		my ($head, $call) = split /\n    call: /, $w, 2;
		$head =~ s/\d+/N/g;
		my ($fn) = ($call // $w) =~ /idem\."([^"]+)"/;
		push @{ $groups{ ($fn // '?') . ' ' . $head } }, $w;
	}
	for my $g (sort keys %groups) {
		my @w = @{ $groups{$g} };
		diag(sprintf("%s: %d call(s), e.g.\n  %s", $title, scalar @w, join("\n  ", @w[ 0 .. ($#w < 2 ? $#w : 2) ])));
	}
}

note sprintf('%d calls in %.1f s (%.1f ms per call)', $ran, $elapsed, $ran ? 1000 * $elapsed / $ran : 0);
note join(', ', map { "$_: $outcomes{$_}" } sort { $outcomes{$b} <=> $outcomes{$a} || $a cmp $b } keys %outcomes);
note join(', ', map { sprintf('%s %d/%d ok', $_, $by_fn{$_}{ok} // 0, $by_fn{$_}{calls}) } sort keys %by_fn);
note "allowed: $_ ($allowed_seen{$_} calls)" for sort keys %allowed_seen;
note sprintf('slowest: %.0f ms %s', 1000 * $_->[0], short($_->[1])) for @slowest;

my %check = (
	'died'                     => 'no call killed its backend',
	'internal error'           => 'no call raised an internal error (SQLSTATE class XX)',
	'internal-looking message' => 'no error message reads like an internal one (cache lookup failed, unrecognized ...)',
	'empty message'            => 'every error has a message',
	'SQLSTATE outside the allowed classes' =>
	  'every SQLSTATE is in an allowed class (' . join(' ', @ALLOWED_CLASSES) . ')',
	'invalid UTF-8 in the error' => 'every error message is valid UTF-8 (the database encoding)',
	'timeout' => "no call ran into the ${statement_timeout_ms} ms statement timeout or temp_file_limit",
);
for my $problem (sort keys %check) {
	my $list = $problems{$problem} // [];
	next if is(scalar @$list, 0, $check{$problem});
	if ($problem eq 'died') {
		diag("backend died during:\n  " . join("\n  ", @$list));
	}
	else {
		report($problem, $list);
	}
}

# The fuzzer must reach the functions, not only fail in front of them.
my @never_ok = grep { !$by_fn{$_}{ok} } grep { !/^(_raise|_forget_dropped)$/ } sort keys %by_fn;
my $ok_share = $ran ? ($outcomes{ok} // 0) / $ran : 0;
ok($ok_share > 0.08, sprintf('%.0f%% of the calls succeeded: the fixture lets valid calls through', 100 * $ok_share));
note 'functions without a successful call (their valid inputs are rare in the pools): ' . join(', ', @never_ok)
  if @never_ok;

# Nothing leaked out of the rolled-back transactions.
$dbh->disconnect;
is($node->safe_psql('fuzz', $state_sql), $state_before,
	'idem state, the fixture tables, relations, grants and roles are as before the run');

$node->stop;
my @log_problems = grep { /terminated by signal|PANIC|TRAP:|server process .* was terminated/ }
  split /\n/, slurp_file($node->logfile);
is(scalar @log_problems, 0, 'no crash in the server log') or diag(join("\n", @log_problems[ 0 .. ($#log_problems < 20 ? $#log_problems : 20) ]));

done_testing();
