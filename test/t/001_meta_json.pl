# META.json follows the PGXN meta-spec 1.0.0: every mandatory key is there,
# well-formed, and agrees with the control file and the install script.
#
# The TAP suite runs these checks on the tree. With PG_IDEMPOTENT_DIST set to
# the archive that `make dist` made (test/package/dist.sh does this), they run
# on the archive instead, unpacked as PGXN unpacks it, after checks of the
# archive's own shape.
use strict;
use warnings;
use File::Basename qw(basename);
use File::Temp qw(tempdir);
use JSON::PP;
use Test::More;

# check_distribution(ROOT, WHAT): the checks of one tree, named "WHAT: ...".
sub check_distribution
{
	my ($root, $what) = @_;

	open(my $fh, '<', "$root/META.json") or die "$root/META.json: $!";
	my $meta = eval { local $/; JSON::PP->new->decode(<$fh>) };
	ok($meta, "$what: META.json parses as JSON") or BAIL_OUT("unparsable META.json: $@");

	# Mandatory keys of meta-spec 1.0.0.
	for my $key (qw(name abstract version maintainer license provides meta-spec)) {
		ok(exists $meta->{$key}, "$what: mandatory key '$key' present");
	}
	is($meta->{'meta-spec'}{version}, '1.0.0', "$what: meta-spec version is 1.0.0");
	# Real metadata or none (issue 26): no placeholder address anywhere, and
	# the prerequisite is the range of majors the code builds for (the
	# README and the description say which of them are tested).
	my $raw = do { open(my $r, '<', "$root/META.json") or die "META.json: $!"; local $/; <$r> };
	unlike($raw, qr/\.invalid\b/, "$what: no placeholder (.invalid) address");
	is($meta->{prereqs}{runtime}{requires}{PostgreSQL}, '>= 15.0.0, < 19.0.0',
		"$what: PostgreSQL prerequisite is 15 to 18");
	like($meta->{description}, qr/Tested on PostgreSQL 15, 17 and 18/, "$what: the description names the tested majors");
	like($meta->{version}, qr/^\d+\.\d+\.\d+$/, "$what: version is a semantic version");
	ok(ref $meta->{maintainer} eq 'ARRAY' ? @{ $meta->{maintainer} } > 0 : length $meta->{maintainer},
		"$what: at least one maintainer");
	my %licenses = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1 artistic_2 bsd
	  freebsd gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1 lgpl_3_0 mit mozilla_1_0
	  mozilla_1_1 openssl perl_5 postgresql qpl_1_0 ssleay sun zlib open_source restricted
	  unrestricted unknown);
	ok($licenses{ $meta->{license} }, "$what: license '$meta->{license}' is a meta-spec license string");
	is($meta->{license}, 'postgresql', "$what: released under the PostgreSQL licence");

	# provides: each extension names an existing file and the same version.
	my $provided = $meta->{provides}{pg_idempotent};
	ok($provided, "$what: provides pg_idempotent");
	for my $key (qw(file version)) {
		ok(defined $provided->{$key}, "$what: provides.pg_idempotent.$key present");
	}
	ok(-f "$root/$provided->{file}", "$what: provided file $provided->{file} exists");
	is($provided->{version}, $meta->{version}, "$what: provided version equals the distribution version");

	# The control file's default_version is the same release.
	open(my $ctl, '<', "$root/pg_idempotent.control") or die "control: $!";
	my ($default_version) = map { /^default_version\s*=\s*'([^']+)'/ ? $1 : () } <$ctl>;
	is($default_version, $meta->{version}, "$what: control default_version equals META.json version");
	# An install script for it, or an update script that leads to it from an
	# earlier release (CREATE EXTENSION runs the chain).
	ok(-f "$root/pg_idempotent--$default_version.sql" || glob("$root/pg_idempotent--*--$default_version.sql"),
	   "$what: install or update script for the default version exists");

	# The LICENSE file is the PostgreSQL licence.
	open(my $lic, '<', "$root/LICENSE") or die "LICENSE: $!";
	my $license_text = do { local $/; <$lic> };
	like($license_text, qr/Permission to use, copy, modify, and distribute this software/,
		"$what: LICENSE carries the PostgreSQL licence text");
	return $meta;
}

my $zip = $ENV{PG_IDEMPOTENT_DIST};
if (!$zip) {
	check_distribution($ENV{REPO_ROOT} // '.', 'tree');
	done_testing();
	exit 0;
}

# The archive: a zip whose entries all sit under pg_idempotent-<version>/,
# <version> being the one in its name.
ok(-f $zip, "archive $zip exists") or BAIL_OUT("no archive at $zip");
my ($version) = basename($zip) =~ /^pg_idempotent-(\d+\.\d+\.\d+)\.zip$/;
ok($version, 'archive is named pg_idempotent-<version>.zip') or BAIL_OUT('badly named archive');
my $top = "pg_idempotent-$version";
my @entries = split /\n/, `unzip -Z1 '$zip'`;
is($?, 0, 'unzip lists the archive');
ok(@entries > 0, 'archive is not empty');
my @outside = grep { !m{^\Q$top\E/} } @entries;
is_deeply(\@outside, [], "every entry is under the single top directory $top/");
# Built from the committed tree, not from a working directory: no build
# outputs (the module, objects, bitcode, the command line tool, pg_regress
# results; bench/results/ is committed on purpose).
my @built = grep { m{\.(so|o|bc|d)$|^\Q$top\E/(cli/pg_idempotent$|results/|tmp_check/)} } @entries;
is_deeply(\@built, [], 'archive holds no build outputs');

my $dir = tempdir(CLEANUP => 1);
system('unzip', '-q', $zip, '-d', $dir) == 0 or BAIL_OUT("cannot unpack $zip");
my $meta = check_distribution("$dir/$top", 'archive');
is($meta->{version}, $version, 'META.json version equals the version in the archive name');

# PGXN's client builds with the Makefile: it must be there and build this
# release.
open(my $mk, '<', "$dir/$top/Makefile") or die "archive Makefile: $!";
my ($extversion) = map { /^EXTVERSION\s*=\s*(\S+)/ ? $1 : () } <$mk>;
is($extversion, $version, "archive Makefile's EXTVERSION equals the archive version");

done_testing();
