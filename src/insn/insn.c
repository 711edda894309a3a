/* The Capstone loader and decoder handles (insn.h).
 *
 * The library is looked for once per process (pthread_once): the soname of
 * the ABI the headers describe, libcapstone.so.CS_API_MAJOR, else the
 * development link; or its functions are given (insn_provide). Every function used is resolved up front; a library
 * missing one counts as absent. The handle stays open to the end: the
 * functions are used until then.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "insn.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define CS_SONAME "libcapstone.so." STR(CS_API_MAJOR)

/* Capstone's functions, from the library loaded or as provided. */
static struct insn_capstone cs;
static bool cs_ok;

static pthread_once_t cs_once = PTHREAD_ONCE_INIT;
static const struct insn_capstone *provided;

void insn_provide(const struct insn_capstone *fns)
{
	provided = fns;
}

static void load_capstone(void)
{
	if (provided) {
		cs = *provided;
	} else {
		void *h = dlopen(CS_SONAME, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			h = dlopen("libcapstone.so", RTLD_NOW | RTLD_LOCAL);
		if (!h)
			return;
		/* POSIX: a function pointer round-trips through void *. */
#define SYM(field, name) *(void **)&cs.field = dlsym(h, name)
		SYM(open, "cs_open");
		SYM(option, "cs_option");
		SYM(malloc, "cs_malloc");
		SYM(free, "cs_free");
		SYM(close, "cs_close");
		SYM(disasm_iter, "cs_disasm_iter");
		SYM(insn_group, "cs_insn_group");
		SYM(reg_name, "cs_reg_name");
#undef SYM
	}
	cs_ok = cs.open && cs.option && cs.malloc && cs.free && cs.close && cs.disasm_iter &&
		cs.insn_group && cs.reg_name;
}

const char *insn_library(void)
{
	return CS_SONAME;
}

struct insn_dec {
	csh h;
	cs_insn *insn;
};

int insn_open(enum bk_arch arch, struct insn_dec **out)
{
	cs_arch csa;
	cs_mode mode;
	switch (arch) {
	case BK_ARCH_X86_64: csa = CS_ARCH_X86; mode = CS_MODE_64; break;
	case BK_ARCH_AARCH64: csa = CS_ARCH_ARM64; mode = CS_MODE_LITTLE_ENDIAN; break;
	default: return BK_E_UNSUPPORTED;
	}
	pthread_once(&cs_once, load_capstone);
	if (!cs_ok)
		return BK_E_UNSUPPORTED;
	struct insn_dec *d = base_calloc(1, sizeof(*d));
	if (!d)
		return BK_E_NOMEM;
	if (cs.open(csa, mode, &d->h) != CS_ERR_OK) {
		base_free(d);
		return BK_E_UNSUPPORTED;
	}
	cs.option(d->h, CS_OPT_DETAIL, CS_OPT_ON);
	d->insn = cs.malloc(d->h);
	if (!d->insn) {
		cs.close(&d->h);
		base_free(d);
		return BK_E_NOMEM;
	}
	*out = d;
	return 0;
}

void insn_close(struct insn_dec *d)
{
	if (!d)
		return;
	cs.free(d->insn, 1);
	cs.close(&d->h);
	base_free(d);
}

const cs_insn *insn_decode(struct insn_dec *d, const uint8_t *bytes, size_t len, uint64_t pc)
{
	const uint8_t *p = bytes;
	uint64_t addr = pc;
	if (!len || !cs.disasm_iter(d->h, &p, &len, &addr, d->insn))
		return NULL;
	return d->insn;
}

bool insn_in_group(struct insn_dec *d, const cs_insn *i, uint8_t group)
{
	return cs.insn_group(d->h, i, group);
}

const char *insn_reg_name(struct insn_dec *d, unsigned reg)
{
	const char *n = cs.reg_name(d->h, reg);
	return n ? n : "?";
}

void insn_text(struct insn_dec *d, const uint8_t *bytes, size_t len, uint64_t pc, char *buf,
	       size_t buflen)
{
	const cs_insn *i = insn_decode(d, bytes, len, pc);
	if (!i)
		snprintf(buf, buflen, "(bad)");
	else if (i->op_str[0])
		snprintf(buf, buflen, "%s %s", i->mnemonic, i->op_str);
	else
		snprintf(buf, buflen, "%s", i->mnemonic);
}
