# pg_idempotent, built by PGXS. CMakeLists.txt builds the same module.
#
#   make && make install      build and install into the PostgreSQL of PG_CONFIG
#   make test                 everything: deps, build, private cluster, all suites
#   make demo                 the story of the seeds, on a throwaway cluster
#   make bench                benchmarks on a throwaway cluster
#   make sanitize             regress + isolation against an ASan/UBSan build
#   make installcheck         the regress suite against PGHOST/PGPORT
#   make dist / make deb      the PGXN archive / the Debian package (see the end)

EXTENSION = pg_idempotent
MODULE_big = pg_idempotent
EXTVERSION = 0.9.0

# One folder per family (merge, overwrite, keys, checkpoints, publish, proof),
# common/ for what families share, pg/ the boundary to PostgreSQL, pg_native/
# the feature code written against PostgreSQL's executor and access methods,
# core/ pure C++ (docs/code-layout.md). PURE_SRCS include no PostgreSQL
# header: src/pure_sources.txt lists them for this Makefile and CMakeLists.txt.
PURE_SRCS = $(sort $(wildcard $(shell grep -v '^\#' src/pure_sources.txt)))
MODULE_SRCS = $(sort $(wildcard src/*.cpp src/*/*.cpp))
OBJS = $(MODULE_SRCS:.cpp=.o)

# 0.1.0 is the released install script and stays as it shipped; each later
# version is an upgrade script, and CREATE EXTENSION runs the chain.
DATA = pg_idempotent--$(EXTVERSION).sql pg_idempotent--0.1.0.sql pg_idempotent--0.1.0--0.2.0.sql pg_idempotent--0.2.0--0.3.0.sql pg_idempotent--0.3.0--0.4.0.sql pg_idempotent--0.4.0--0.5.0.sql pg_idempotent--0.5.0--0.6.0.sql pg_idempotent--0.6.0--0.7.0.sql pg_idempotent--0.7.0--0.8.0.sql pg_idempotent--0.8.0--0.9.0.sql

REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --inputdir=. --load-extension=$(EXTENSION)

# Debian's server-dev package puts the versioned pg_config here.
PG_CONFIG ?= $(shell test -x /usr/lib/postgresql/15/bin/pg_config && echo /usr/lib/postgresql/15/bin/pg_config || echo pg_config)

PG_CPPFLAGS = -I$(CURDIR)/src
# -fvisibility-inlines-hidden as CMake's VISIBILITY_INLINES_HIDDEN; what the
# module exports is src/exports.map's (linked below, both builds).
PG_CXXFLAGS = -std=c++17 -Wall -Wextra -Werror -fvisibility=hidden -fvisibility-inlines-hidden -MMD -MP
SHLIB_LINK += -lstdc++ -Wl,--version-script=$(CURDIR)/src/exports.map

PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
# The majors src/pg/compat.hpp knows (tested: 15, 17 and 18; 16 is in no
# Debian release).
PG_MAJORS_SUPPORTED = 15 16 17 18
ifneq ($(PGXS),)
PG_MAJOR := $(shell $(PG_CONFIG) --version | sed -n 's/^PostgreSQL \([0-9][0-9]*\).*/\1/p')
ifeq ($(filter $(PG_MAJOR),$(PG_MAJORS_SUPPORTED)),)
$(error pg_idempotent builds against PostgreSQL $(PG_MAJORS_SUPPORTED); $(PG_CONFIG) is PostgreSQL $(PG_MAJOR))
endif
include $(PGXS)
# Relinked when what it exports changes.
$(shlib): src/exports.map
# PostgreSQL's headers trip C++17 warnings (register): read them as system
# headers. The JIT bitcode rule ignores PG_CXXFLAGS and needs the language.
override CPPFLAGS := $(patsubst -I%,-isystem %,$(filter -I$(includedir_server)%,$(CPPFLAGS))) $(filter-out -I$(includedir_server)%,$(CPPFLAGS))
COMPILE.cxx.bc += -std=c++17 -Wno-register -I$(CURDIR)/src
else
all install installcheck:
	@echo "pg_config was not found: run 'make test' as root, install postgresql-server-dev-15, or pass PG_CONFIG=<the pg_config of PostgreSQL $(PG_MAJORS_SUPPORTED)>." >&2; exit 2
endif

# The command line tool (libpq), built and installed beside the module.
CLI_SRCS = cli/pg_idempotent.cpp cli/options.cpp cli/database.cpp cli/dispatch.cpp
# CLI_FLAGS: extra compiler and linker flags (debian/rules passes Debian's
# hardening and -g, which PGXS's own flag variables would not carry here).
cli/pg_idempotent: $(CLI_SRCS) cli/options.hpp cli/database.hpp cli/dispatch.hpp src/core/row_text.hpp
	$(CXX) -std=c++17 -Wall -Wextra -Werror -O2 $(CLI_FLAGS) -I$(CURDIR)/src -I$(shell $(PG_CONFIG) --includedir) -o $@ $(CLI_SRCS) \
		-L$(shell $(PG_CONFIG) --libdir) -lpq
all: cli/pg_idempotent
install: install-cli
.PHONY: install-cli
# bindir does not exist yet under a DESTDIR (debian/rules installs into one).
install-cli: cli/pg_idempotent
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	$(INSTALL_PROGRAM) cli/pg_idempotent '$(DESTDIR)$(bindir)/pg_idempotent'
EXTRA_CLEAN += cli/pg_idempotent

# Header dependencies (-MMD): a changed header rebuilds what includes it.
-include $(OBJS:.o=.d)
EXTRA_CLEAN += $(OBJS:.o=.d)

.PHONY: test demo bench unit install-script
test:
	bash test/run_all.sh
demo:
	bash demo/run.sh
bench:
	bash bench/run.sh
# The full install script of EXTVERSION, generated from 0.1.0's and the
# upgrade scripts (tools/install_script.sh says why); rerun after changing
# an upgrade script. The docs suite fails when the committed one differs.
install-script:
	bash tools/install_script.sh >pg_idempotent--$(EXTVERSION).sql
unit:
	bash test/unit/run.sh
# The C++ layout is .clang-format's, not argued about: `make format` applies
# it, `make format-check` (part of the unit suite) fails on any difference.
FORMAT_FILES = $(shell git ls-files 'src/*.cpp' 'src/*.hpp' 'cli/*.cpp' 'cli/*.hpp' 'test/unit/*.cpp' 'test/unit/*.hpp' 2>/dev/null)
CLANG_FORMAT ?= clang-format
.PHONY: format format-check
format:
	$(CLANG_FORMAT) -i $(FORMAT_FILES)
format-check:
	$(CLANG_FORMAT) --dry-run -Werror $(FORMAT_FILES)
# test/unit/run.sh and test/cmake/run.sh read the sources from here.
.PHONY: print-pure-srcs print-module-srcs
print-pure-srcs:
	@echo $(PURE_SRCS)
print-module-srcs:
	@echo $(MODULE_SRCS)
# Builds a copy of the tree and installs it into a private copy of
# PostgreSQL's installation, never over the installed module
# (test/sanitize/run.sh); make test runs it too.
.PHONY: sanitize
sanitize:
	bash test/sanitize/run.sh

# Release archives (README: "Install from a package"); OUTDIR receives them.
#   make dist   pg_idempotent-<version>.zip for PGXN: the committed tree (HEAD;
#               uncommitted edits are not in it) under the single top
#               directory pg_idempotent-<version>/ that PGXN requires
#   make deb    postgresql-15-pg-idempotent_<version>_<arch>.deb, built by
#               dpkg-buildpackage in a copy of the tree (test/package/build_deb.sh)
OUTDIR ?= .
DIST_NAME = $(EXTENSION)-$(EXTVERSION)
.PHONY: dist deb
dist:
	@ctl=$$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" $(EXTENSION).control); \
	if [ "$$ctl" != "$(EXTVERSION)" ]; then \
	    echo "make dist: the Makefile's EXTVERSION is $(EXTVERSION) but $(EXTENSION).control's default_version is '$$ctl'" >&2; exit 1; \
	fi
	@git diff --quiet HEAD -- || echo "make dist: warning: uncommitted changes are not in the archive, which is HEAD" >&2
	git archive --format=zip --prefix=$(DIST_NAME)/ -o '$(OUTDIR)/$(DIST_NAME).zip' HEAD
deb:
	bash test/package/build_deb.sh '$(OUTDIR)'
