/* Demangling through libiberty (the demangler binutils and gdb use), so the
 * library needs no C++ runtime: __cxa_demangle would pull in libstdc++.
 *
 * The callback entry points are used rather than cplus_demangle(): those
 * write the result through a callback into our own buffer (allocated through
 * the funnel) instead of malloc'ing it, and never call xmalloc, which would
 * exit the process on failure. Rust is tried first, as cplus_demangle does
 * under DMGL_AUTO: a legacy Rust name is also a valid Itanium C++ name
 * ("_ZN4core3fmt5write17h0123456789abcdefE"), and only the Rust demangler
 * drops the hash. Options are those of `addr2line -C` (DMGL_PARAMS |
 * DMGL_ANSI), so the two print the same text.
 *
 * Bounds: libiberty's C++ demangler keeps its component tables in stack
 * arrays sized by the input (a few dozen bytes per input character) and caps
 * its own recursion (DEMANGLE_RECURSION_LIMIT); names longer than
 * SYM_MAX_MANGLED are left mangled so hostile tables cannot ask for
 * megabytes of stack.
 */
#include <libiberty/demangle.h>

#include "sym.h"

struct dm_out {
	char *p;
	size_t len, cap;
	bool failed;
};

static void dm_append(const char *s, size_t n, void *opaque)
{
	struct dm_out *o = opaque;
	if (o->failed)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 128;
		while (cap < o->len + n + 1)
			cap *= 2;
		char *p = base_realloc(o->p, cap);
		if (!p) {
			o->failed = true;
			return;
		}
		o->p = p;
		o->cap = cap;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

char *sym_demangle(const char *name)
{
	bool nomem;
	return sym_demangle_ex(name, &nomem);
}

char *sym_demangle_ex(const char *name, bool *nomem)
{
	*nomem = false;
	if (!name || name[0] != '_')
		return NULL;
	bool itanium = name[1] == 'Z' || strncmp(name, "_GLOBAL_", 8) == 0;
	bool rust_v0 = name[1] == 'R';
	if (!itanium && !rust_v0)
		return NULL;
	if (strnlen(name, SYM_MAX_MANGLED + 1) > SYM_MAX_MANGLED)
		return NULL;

	const int opts = DMGL_PARAMS | DMGL_ANSI;
	struct dm_out o = { 0 };
	int ok = rust_demangle_callback(name, opts, dm_append, &o);
	if (o.failed) {
		base_free(o.p);
		*nomem = true;
		return NULL;
	}
	if (!ok || !o.p) {
		base_free(o.p);
		o = (struct dm_out){ 0 };
		ok = itanium && cplus_demangle_v3_callback(name, opts, dm_append, &o);
	}
	if (!ok || o.failed || !o.p || o.len == 0) {
		*nomem = o.failed;
		base_free(o.p);
		return NULL;
	}
	return o.p;
}
