# META.json follows the PGXN meta-spec 1.0.0: every mandatory key is there,
# well-formed, and agrees with the control file and the install script.
use strict;
use warnings;
use JSON::PP;
use Test::More;

my $root = $ENV{REPO_ROOT} // '.';
open(my $fh, '<', "$root/META.json") or die "META.json: $!";
my $meta = eval { local $/; JSON::PP->new->decode(<$fh>) };
ok($meta, 'META.json parses as JSON') or BAIL_OUT("unparsable META.json: $@");

# Mandatory keys of meta-spec 1.0.0.
for my $key (qw(name abstract version maintainer license provides meta-spec)) {
	ok(exists $meta->{$key}, "mandatory key '$key' present");
}
is($meta->{'meta-spec'}{version}, '1.0.0', 'meta-spec version is 1.0.0');
like($meta->{version}, qr/^\d+\.\d+\.\d+$/, 'version is a semantic version');
ok(ref $meta->{maintainer} eq 'ARRAY' ? @{ $meta->{maintainer} } > 0 : length $meta->{maintainer},
	'at least one maintainer');
my %licenses = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1 artistic_2 bsd
  freebsd gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1 lgpl_3_0 mit mozilla_1_0
  mozilla_1_1 openssl perl_5 postgresql qpl_1_0 ssleay sun zlib open_source restricted
  unrestricted unknown);
ok($licenses{ $meta->{license} }, "license '$meta->{license}' is a meta-spec license string");
is($meta->{license}, 'postgresql', 'released under the PostgreSQL licence');

# provides: each extension names an existing file and the same version.
my $provided = $meta->{provides}{pg_idempotent};
ok($provided, 'provides pg_idempotent');
for my $key (qw(file version)) {
	ok(defined $provided->{$key}, "provides.pg_idempotent.$key present");
}
ok(-f "$root/$provided->{file}", "provided file $provided->{file} exists");
is($provided->{version}, $meta->{version}, 'provided version equals the distribution version');

# The control file's default_version is the same release.
open(my $ctl, '<', "$root/pg_idempotent.control") or die "control: $!";
my ($default_version) = map { /^default_version\s*=\s*'([^']+)'/ ? $1 : () } <$ctl>;
is($default_version, $meta->{version}, 'control default_version equals META.json version');
ok(-f "$root/pg_idempotent--$default_version.sql", 'install script for the default version exists');

# The LICENSE file is the PostgreSQL licence.
open(my $lic, '<', "$root/LICENSE") or die "LICENSE: $!";
my $license_text = do { local $/; <$lic> };
like($license_text, qr/Permission to use, copy, modify, and distribute this software/,
	'LICENSE carries the PostgreSQL licence text');

done_testing();
