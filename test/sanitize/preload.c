/*
 * Preloaded into the sanitized test server right after the ASan runtime
 * (LD_PRELOAD="libasan.so.8 preload.so"; see test/sanitize/run.sh). Without
 * it, postgres hangs at start on Debian 12 and the run times out.
 *
 * Why: libgpg-error (a dependency of libsystemd and libgcrypt, which postgres
 * links) calls bindtextdomain() from its constructor, and that constructor
 * runs before the preloaded libasan's. bindtextdomain() mallocs while holding
 * glibc's _nl_state_lock for writing; that first malloc initializes ASan,
 * whose init calls dlerror() -> dcgettext(), which takes the same lock for
 * reading in the same thread. The lock is left corrupted, and postgres then
 * blocks forever in its own bindtextdomain() call in main() (seen with gdb
 * here; the same hang as google/sanitizers#1270). Interposing bindtextdomain()
 * lets one malloc initialize ASan before the lock is taken.
 *
 * UBSan needs no help to run, but note why its reports go to the server log
 * rather than to a log_path: the sanitizer runtimes read their options from
 * /proc/self/environ, not from environ. ASan reads them as the postmaster
 * starts, and forked backends inherit them. UBSan initializes lazily, at its
 * first report, in a backend whose original environment area PostgreSQL has
 * already overwritten with the process title (ps_status.c), so it finds no
 * UBSAN_OPTIONS and keeps its defaults: report to stderr, exit code 1. (Its
 * __ubsan_default_options hook is called inside libubsan and cannot be
 * interposed from here; tried.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

char *bindtextdomain(const char *domainname, const char *dirname);

char *
bindtextdomain(const char *domainname, const char *dirname)
{
	static char *(*real_bindtextdomain) (const char *, const char *);
	/* volatile: the compiler would otherwise drop a malloc that is freed at once */
	void	   *volatile first = malloc(1);

	free(first);
	if (real_bindtextdomain == NULL)
		real_bindtextdomain = (char *(*) (const char *, const char *))
			dlsym(RTLD_NEXT, "bindtextdomain");
	return real_bindtextdomain(domainname, dirname);
}
