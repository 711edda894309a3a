/* src/loader: ELF identity, segments, unwind sections, compressed sections,
 * build-id / debuglink, separate debug files, and hostile input.
 *
 * Inputs are built at test time in a temporary directory with the system
 * toolchain (gcc, objcopy, ld, aarch64-linux-gnu-gcc); a tool that is
 * missing skips only the checks that need it, and says so. Expected values
 * come from readelf, an independent reader of the same files. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "base/dwarf.h"
#include "check.h"
#include "loader/loader.h"

static char tmp[64];

/* ---- Helpers ------------------------------------------------------------- */

static bool run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char full[4200];
	snprintf(full, sizeof(full), "( %s ) >/dev/null 2>&1", cmd);
	return system(full) == 0;
}

/* TMP/NAME; each result stays valid for the whole run. */
static char *tpath(const char *name)
{
	static char pool[512][160];
	static unsigned next;
	if (next >= BK_ARRAY_LEN(pool)) {
		fprintf(stderr, "tpath pool exhausted\n");
		exit(2);
	}
	char *b = pool[next++];
	snprintf(b, sizeof(pool[0]), "%s/%s", tmp, name);
	return b;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

static bool spit(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return false;
	bool ok = fwrite(p, 1, len, f) == len;
	return fclose(f) == 0 && ok;
}

/* readelf -SW: address, offset and size of section NAME. */
static bool readelf_section(const char *path, const char *name, uint64_t *addr, uint64_t *off,
			    uint64_t *size)
{
	char cmd[600], line[1024];
	snprintf(cmd, sizeof(cmd), "readelf -SW '%s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return false;
	bool found = false;
	while (!found && fgets(line, sizeof(line), p)) {
		char *rb = strchr(line, ']');
		char n[256], type[64];
		unsigned long long a, o, s;
		if (line[0] == ' ' && rb &&
		    sscanf(rb + 1, "%255s %63s %llx %llx %llx", n, type, &a, &o, &s) == 5 &&
		    strcmp(n, name) == 0) {
			*addr = a;
			*off = o;
			*size = s;
			found = true;
		}
	}
	pclose(p);
	return found;
}

/* readelf -n: the build-id as lowercase hex, "" if none. */
static void readelf_build_id(const char *path, char hex[static 256])
{
	char cmd[600], line[1024];
	hex[0] = '\0';
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	while (fgets(line, sizeof(line), p)) {
		char *b = strstr(line, "Build ID: ");
		if (b && !hex[0])
			sscanf(b + 10, "%255s", hex);
	}
	pclose(p);
}

static void to_hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = '\0';
}

/* Touch every byte the loader hands out, so ASan sees any overrun. */
static unsigned touch_all(const struct ldr_elf *e)
{
	const struct ldr_section *secs[] = { &e->eh_frame, &e->eh_frame_hdr, &e->debug_frame,
					     &e->text, &e->got };
	unsigned sum = 0;
	for (size_t i = 0; i < BK_ARRAY_LEN(secs); i++)
		for (size_t j = 0; secs[i]->data && j < secs[i]->len; j++)
			sum += secs[i]->data[j];
	for (size_t i = 0; i < e->nsegs; i++) {
		uint8_t chunk[64];
		uint64_t sz = e->segs[i].memsz < 4096 ? e->segs[i].memsz : 4096;
		for (uint64_t o = 0; o + sizeof(chunk) <= sz; o += sizeof(chunk))
			if (ldr_read_vaddr(e, e->segs[i].vaddr + o, chunk, sizeof(chunk)) == 0)
				sum += chunk[0];
	}
	if (e->debuglink)
		sum += (unsigned)strlen(e->debuglink);
	return sum;
}

/* ---- Hand-built images ------------------------------------------------------ */

static void put(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

#define MINI_LEN 0x400
#define MINI_BASE 0x400000u
#define MINI_HDR 0x200 /* .eh_frame_hdr offset (vaddr MINI_BASE + this) */

/* A section-less ELF: PT_LOAD [0, 0x400) at MINI_BASE with 0x2000 of memory,
 * PT_NOTE (align 8) holding an odd-sized note then NT_GNU_BUILD_ID 01..14,
 * PT_GNU_EH_FRAME at MINI_HDR: version 1, ENC, omit, omit, then PTR. */
struct mini {
	bool is64;
	uint16_t machine;
	uint8_t hdr_enc;
	uint64_t hdr_ptr;      /* raw field value */
	unsigned hdr_ptr_size; /* bytes of the field */
	uint64_t load_align;
};

static void mini_elf(uint8_t *img, const struct mini *m)
{
	memset(img, 0, MINI_LEN);
	memcpy(img, ELFMAG, SELFMAG);
	img[EI_CLASS] = m->is64 ? ELFCLASS64 : ELFCLASS32;
	img[EI_DATA] = ELFDATA2LSB;
	img[EI_VERSION] = EV_CURRENT;
	unsigned w = m->is64 ? 8 : 4;
	unsigned phent = m->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	put(img + 16, ET_EXEC, 2);
	put(img + 18, m->machine, 2);
	put(img + 20, EV_CURRENT, 4);
	put(img + 24, MINI_BASE + 0x180, w);          /* e_entry */
	put(img + 24 + w, 0x40, w);                   /* e_phoff */
	put(img + 24 + 2 * w, 0, w);                  /* e_shoff */
	uint8_t *f = img + 24 + 3 * w + 4;            /* after e_flags */
	put(f + 0, m->is64 ? 64 : 52, 2);             /* e_ehsize */
	put(f + 2, phent, 2);
	put(f + 4, 3, 2);                             /* e_phnum */
	put(f + 6, m->is64 ? 64 : 40, 2);             /* e_shentsize */

	/* p_type, then (64) flags, offset, vaddr, paddr, filesz, memsz, align
	 *            (32) offset, vaddr, paddr, filesz, memsz, flags, align */
	struct { uint32_t type, flags; uint64_t off, vaddr, filesz, memsz, align; } ph[3] = {
		{ PT_LOAD, PF_R | PF_X, 0, MINI_BASE, MINI_LEN, 0x2000, m->load_align },
		{ PT_NOTE, PF_R, 0x100, MINI_BASE + 0x100, 0x48, 0x48, 8 },
		{ PT_GNU_EH_FRAME, PF_R, MINI_HDR, MINI_BASE + MINI_HDR, 0x10, 0x10, 4 },
	};
	for (int i = 0; i < 3; i++) {
		uint8_t *p = img + 0x40 + i * phent;
		put(p, ph[i].type, 4);
		if (m->is64) {
			put(p + 4, ph[i].flags, 4);
			put(p + 8, ph[i].off, 8);
			put(p + 16, ph[i].vaddr, 8);
			put(p + 24, ph[i].vaddr, 8);
			put(p + 32, ph[i].filesz, 8);
			put(p + 40, ph[i].memsz, 8);
			put(p + 48, ph[i].align, 8);
		} else {
			put(p + 4, ph[i].off, 4);
			put(p + 8, ph[i].vaddr, 4);
			put(p + 12, ph[i].vaddr, 4);
			put(p + 16, ph[i].filesz, 4);
			put(p + 20, ph[i].memsz, 4);
			put(p + 24, ph[i].flags, 4);
			put(p + 28, ph[i].align, 4);
		}
	}
	/* Note area (align 8): a note with namesz 5 whose padding differs
	 * between 4- and 8-alignment, then the build-id at area offset 32. */
	uint8_t *n = img + 0x100;
	put(n, 5, 4);
	put(n + 4, 4, 4);
	put(n + 8, 1, 4);
	memcpy(n + 12, "Xxxx", 5);
	put(n + 24, 0xdeadbeef, 4);
	n += 32;
	put(n, 4, 4);
	put(n + 4, 20, 4);
	put(n + 8, NT_GNU_BUILD_ID, 4);
	memcpy(n + 12, "GNU", 4);
	for (int i = 0; i < 20; i++)
		n[16 + i] = (uint8_t)(i + 1);

	uint8_t *h = img + MINI_HDR;
	h[0] = 1; /* version */
	h[1] = m->hdr_enc;
	h[2] = DW_EH_PE_omit; /* fde_count_enc */
	h[3] = DW_EH_PE_omit; /* table_enc */
	put(h + 4, m->hdr_ptr, m->hdr_ptr_size);
	for (int i = 0x300; i < 0x3f0; i++)
		img[i] = 0xab;
	img[0x180] = 0xcd;
}

static void test_mini_encodings(void)
{
	/* One DW_EH_PE encoding of eh_frame_ptr per row. The field sits at
	 * vaddr MINI_BASE + MINI_HDR + 4 (the pcrel base); datarel is relative
	 * to the start of .eh_frame_hdr. */
	static const struct {
		bool is64;
		uint8_t enc;
		int64_t val; /* relative to the encoding's base */
		unsigned size;
		uint64_t want; /* 0: eh_frame stays absent */
		const char *name;
	} rows[] = {
		{ true, DW_EH_PE_pcrel | DW_EH_PE_sdata4, 0x300 - (MINI_HDR + 4), 4, MINI_BASE + 0x300, "pcrel|sdata4" },
		{ true, DW_EH_PE_pcrel | DW_EH_PE_sdata4, 0x180 - (MINI_HDR + 4), 4, MINI_BASE + 0x180, "pcrel|sdata4 negative" },
		{ true, DW_EH_PE_pcrel | DW_EH_PE_sdata8, 0x300 - (MINI_HDR + 4), 8, MINI_BASE + 0x300, "pcrel|sdata8" },
		{ true, DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x300 - MINI_HDR, 4, MINI_BASE + 0x300, "datarel|sdata4" },
		{ true, DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x180 - MINI_HDR, 4, MINI_BASE + 0x180, "datarel|sdata4 negative" },
		{ true, DW_EH_PE_udata4, MINI_BASE + 0x300, 4, MINI_BASE + 0x300, "udata4" },
		{ true, DW_EH_PE_udata8, MINI_BASE + 0x300, 8, MINI_BASE + 0x300, "udata8" },
		{ true, DW_EH_PE_sdata8, MINI_BASE + 0x300, 8, MINI_BASE + 0x300, "sdata8" },
		{ true, DW_EH_PE_absptr, MINI_BASE + 0x300, 8, MINI_BASE + 0x300, "absptr 64" },
		{ false, DW_EH_PE_absptr, MINI_BASE + 0x300, 4, MINI_BASE + 0x300, "absptr 32" },
		{ false, DW_EH_PE_pcrel | DW_EH_PE_sdata4, 0x300 - (MINI_HDR + 4), 4, MINI_BASE + 0x300, "pcrel|sdata4 32" },
		{ true, DW_EH_PE_textrel | DW_EH_PE_sdata4, 0x100, 4, 0, "textrel: unsupported" },
		{ true, DW_EH_PE_indirect | DW_EH_PE_pcrel | DW_EH_PE_sdata4, 0xfc, 4, 0, "indirect" },
		{ true, DW_EH_PE_omit, 0, 4, 0, "omit" },
		{ true, DW_EH_PE_uleb128, 0x10, 1, 0, "uleb128: not for eh_frame_ptr" },
		{ true, DW_EH_PE_udata4, MINI_BASE + 0x1000, 4, 0, "into .bss" },
		{ true, DW_EH_PE_udata4, MINI_BASE + 0x5000, 4, 0, "outside every segment" },
	};
	uint8_t img[MINI_LEN];
	for (size_t i = 0; i < BK_ARRAY_LEN(rows); i++) {
		struct mini m = { rows[i].is64, EM_X86_64, rows[i].enc, 0, rows[i].size, 0x1000 };
		m.hdr_ptr = (uint64_t)rows[i].val;
		mini_elf(img, &m);
		struct ldr_elf *e = NULL;
		int err = ldr_open_memory(img, sizeof(img), &e);
		CHECK_INT(err, 0, rows[i].name);
		if (err)
			continue;
		CHECK(e->has_eh_frame_hdr_seg, "%s", rows[i].name);
		CHECK(e->eh_frame_hdr.present && e->eh_frame_hdr.len == 0x10 &&
			      e->eh_frame_hdr.addr == MINI_BASE + MINI_HDR &&
			      e->eh_frame_hdr.file_off == MINI_HDR,
		      "%s: hdr from the segment", rows[i].name);
		if (rows[i].want) {
			CHECK(e->eh_frame.present, "%s: eh_frame present", rows[i].name);
			CHECK_U64(e->eh_frame.addr, rows[i].want, rows[i].name);
			CHECK_U64(e->eh_frame.file_off, rows[i].want - MINI_BASE, rows[i].name);
			/* To the end of the segment's file bytes. */
			CHECK_U64(e->eh_frame.len, MINI_LEN - (rows[i].want - MINI_BASE), rows[i].name);
			CHECK(e->eh_frame.data && e->eh_frame.data[0] == img[rows[i].want - MINI_BASE],
			      "%s: data", rows[i].name);
		} else {
			CHECK(!e->eh_frame.present && !e->eh_frame.data, "%s: eh_frame absent",
			      rows[i].name);
		}
		ldr_close(e);
	}
}

static void test_mini_fields(void)
{
	uint8_t img[MINI_LEN];
	for (int is64 = 0; is64 <= 1; is64++) {
		const char *ctx = is64 ? "mini64" : "mini32";
		struct mini m = { is64, is64 ? EM_X86_64 : EM_ARM, DW_EH_PE_udata4, MINI_BASE + 0x300, 4, 0 };
		mini_elf(img, &m);
		struct ldr_elf *e = NULL;
		int err = ldr_open_memory(img, sizeof(img), &e);
		CHECK_INT(err, 0, ctx);
		if (err)
			continue;
		CHECK_INT(e->elf_class, is64 ? ELFCLASS64 : ELFCLASS32, ctx);
		CHECK_INT(e->addr_size, is64 ? 8 : 4, ctx);
		CHECK_INT(e->machine, m.machine, ctx);
		CHECK_INT(e->type, ET_EXEC, ctx);
		CHECK_U64(e->entry, MINI_BASE + 0x180, ctx);
		CHECK(is64 ? e->arch && e->arch->arch == BK_ARCH_X86_64 : e->arch == NULL, "%s: arch", ctx);
		CHECK(e->path == NULL, "%s: memory image has no path", ctx);
		CHECK_INT(e->nsegs, 1, ctx);
		CHECK_U64(e->segs[0].vaddr, MINI_BASE, ctx);
		CHECK_U64(e->segs[0].memsz, 0x2000, ctx);
		CHECK_U64(e->segs[0].filesz, MINI_LEN, ctx);
		CHECK_INT(e->segs[0].flags, PF_R | PF_X, ctx);
		CHECK_U64(e->min_vaddr, MINI_BASE, ctx);
		/* Build-id behind an 8-aligned odd-sized note. */
		CHECK_INT(e->build_id_len, 20, ctx);
		CHECK(e->build_id[0] == 1 && e->build_id[19] == 20, "%s: build-id bytes", ctx);
		CHECK(e->debuglink == NULL, "%s: no debuglink", ctx);
		CHECK(!e->debug_frame.present && !e->text.present && !e->got.present, "%s: no sections", ctx);

		CHECK_INT(ldr_load_bias(e, MINI_BASE + 0x100000), 0x100000, ctx);
		CHECK_INT(ldr_load_bias(e, MINI_BASE - 0x100000), -0x100000, ctx);
		CHECK_INT(ldr_load_bias(e, MINI_BASE), 0, ctx);

		uint8_t b[32];
		CHECK_INT(ldr_read_vaddr(e, MINI_BASE, b, 4), 0, ctx);
		CHECK(memcmp(b, ELFMAG, 4) == 0, "%s: read at the base", ctx);
		memset(b, 0x55, sizeof(b));
		CHECK_INT(ldr_read_vaddr(e, MINI_BASE + MINI_LEN - 8, b, 16), 0, ctx);
		CHECK(memcmp(b, img + MINI_LEN - 8, 8) == 0 && b[8] == 0 && b[15] == 0,
		      "%s: file bytes then .bss zeros", ctx);
		CHECK_INT(ldr_read_vaddr(e, MINI_BASE + 0x2000 - 8, b, 8), 0, ctx);
		CHECK_INT(ldr_read_vaddr(e, MINI_BASE + 0x2000 - 8, b, 9), BK_E_MEMORY, ctx);
		CHECK_INT(ldr_read_vaddr(e, MINI_BASE - 1, b, 1), BK_E_MEMORY, ctx);
		CHECK_INT(ldr_read_vaddr(e, MINI_BASE + 0x2000, b, 1), BK_E_MEMORY, ctx);
		CHECK_INT(ldr_read_vaddr(e, MINI_BASE, b, SIZE_MAX), BK_E_MEMORY, ctx);
		CHECK_INT(ldr_read_vaddr(e, UINT64_MAX, b, 2), BK_E_MEMORY, ctx);
		struct base_mem mem = { ldr_mem_read, e };
		CHECK_INT(base_mem_read(&mem, MINI_BASE + 0x180, b, 1), 0, ctx);
		CHECK_INT(b[0], 0xcd, ctx);
		CHECK_INT(base_mem_read(&mem, 0x10, b, 1), BK_E_MEMORY, ctx);
		ldr_close(e);
	}

	/* min_vaddr rounds down to p_align, and to 4096 when p_align is 0/1. */
	static const struct { uint64_t align, vaddr, want; } rnd[] = {
		{ 0, 0x400123, 0x400000 },
		{ 1, 0x400123, 0x400000 },
		{ 0x10000, 0x412345, 0x410000 },
		{ 0x200000, 0x412345, 0x400000 },
	};
	for (size_t i = 0; i < BK_ARRAY_LEN(rnd); i++) {
		struct mini m = { true, EM_AARCH64, DW_EH_PE_omit, 0, 4, rnd[i].align };
		mini_elf(img, &m);
		put(img + 0x40 + 16, rnd[i].vaddr, 8);
		struct ldr_elf *e = NULL;
		CHECK_INT(ldr_open_memory(img, sizeof(img), &e), 0, "rounding");
		if (!e)
			continue;
		CHECK_U64(e->min_vaddr, rnd[i].want, "min_vaddr rounding");
		CHECK(e->arch && e->arch->arch == BK_ARCH_AARCH64, "aarch64 arch");
		CHECK_INT(ldr_load_bias(e, rnd[i].want + 0x7f0000000000), 0x7f0000000000, "bias");
		ldr_close(e);
	}
}

/* Header damage, one defect per row, each with its exact error. */
static void test_mini_corrupt(void)
{
	static const struct {
		bool is64;
		unsigned off, size;
		uint64_t val;
		int want;
		const char *name;
	} rows[] = {
		{ true, EI_CLASS, 1, 0, BK_E_CORRUPT, "ELFCLASSNONE" },
		{ true, EI_CLASS, 1, 3, BK_E_CORRUPT, "class 3" },
		{ true, EI_DATA, 1, ELFDATA2MSB, BK_E_UNSUPPORTED, "big-endian" },
		{ false, EI_DATA, 1, ELFDATA2MSB, BK_E_UNSUPPORTED, "big-endian 32" },
		{ true, EI_DATA, 1, 0, BK_E_CORRUPT, "ELFDATANONE" },
		{ true, EI_VERSION, 1, 0, BK_E_CORRUPT, "EV_NONE" },
		{ true, 0, 1, 0x7e, BK_E_NOT_ELF, "bad magic" },
		{ true, 3, 1, 'f', BK_E_NOT_ELF, "bad magic 3" },
		{ true, 54, 2, 40, BK_E_CORRUPT, "e_phentsize" },
		{ false, 42, 2, 56, BK_E_CORRUPT, "e_phentsize 32" },
		{ true, 56, 2, 0x100, BK_E_CORRUPT, "e_phnum past the end" },
		{ true, 56, 2, PN_XNUM, BK_E_CORRUPT, "PN_XNUM without sections" },
		{ true, 32, 8, 0x3f0, BK_E_CORRUPT, "e_phoff near the end" },
		{ true, 32, 8, UINT64_MAX - 8, BK_E_CORRUPT, "e_phoff wraps" },
		{ true, 40, 8, 0x3f0, BK_E_CORRUPT, "e_shoff near the end" },
		{ true, 40, 8, UINT64_MAX, BK_E_CORRUPT, "e_shoff huge" },
		{ true, 60, 2, 3, BK_E_CORRUPT, "e_shnum without e_shoff" },
		{ false, 32, 4, 0x3f0, BK_E_CORRUPT, "e_shoff 32 near the end" },
		/* The PT_LOAD (phdr 0 at 0x40, 64-bit). */
		{ true, 0x40 + 8, 8, 0x300, BK_E_CORRUPT, "PT_LOAD past the end" },
		{ true, 0x40 + 32, 8, 0x401, BK_E_CORRUPT, "PT_LOAD filesz past the end" },
		{ true, 0x40 + 40, 8, 0x100, BK_E_CORRUPT, "filesz > memsz" },
		{ true, 0x40 + 16, 8, UINT64_MAX - 0x100, BK_E_CORRUPT, "vaddr + memsz wraps" },
		/* The PT_NOTE (phdr 1). */
		{ true, 0x78 + 8, 8, 0x3f0, BK_E_CORRUPT, "PT_NOTE past the end" },
		{ false, 0x60 + 4, 4, 0x3f0, BK_E_CORRUPT, "PT_NOTE 32 past the end" },
	};
	uint8_t img[MINI_LEN];
	for (size_t i = 0; i < BK_ARRAY_LEN(rows); i++) {
		struct mini m = { rows[i].is64, EM_X86_64, DW_EH_PE_udata4, MINI_BASE + 0x300, 4, 0x1000 };
		mini_elf(img, &m);
		put(img + rows[i].off, rows[i].val, rows[i].size);
		struct ldr_elf *e = (struct ldr_elf *)&e;
		CHECK_INT(ldr_open_memory(img, sizeof(img), &e), rows[i].want, rows[i].name);
		CHECK(e == NULL, "%s: *out cleared", rows[i].name);
	}

	/* A malformed note or eh_frame_hdr is not a reason to refuse the file. */
	struct mini m = { true, EM_X86_64, DW_EH_PE_udata4, MINI_BASE + 0x300, 4, 0x1000 };
	mini_elf(img, &m);
	put(img + 0x100 + 32 + 4, 0x1000, 4); /* build-id descsz past the area */
	img[MINI_HDR] = 2;                     /* eh_frame_hdr version 2 */
	struct ldr_elf *e = NULL;
	CHECK_INT(ldr_open_memory(img, sizeof(img), &e), 0, "bad note, bad hdr version");
	if (e) {
		CHECK_INT(e->build_id_len, 0, "truncated note ignored");
		CHECK(e->eh_frame_hdr.present && !e->eh_frame.present, "hdr version 2: no eh_frame");
		ldr_close(e);
	}
}

/* ---- System binaries -------------------------------------------------------- */

static void check_against_readelf(const char *path, const struct ldr_elf *e)
{
	static const struct { const char *name; size_t off; } secs[] = {
		{ ".eh_frame", offsetof(struct ldr_elf, eh_frame) },
		{ ".eh_frame_hdr", offsetof(struct ldr_elf, eh_frame_hdr) },
		{ ".text", offsetof(struct ldr_elf, text) },
		{ ".got", offsetof(struct ldr_elf, got) },
		{ ".debug_frame", offsetof(struct ldr_elf, debug_frame) },
	};
	for (size_t i = 0; i < BK_ARRAY_LEN(secs); i++) {
		const struct ldr_section *s =
			(const struct ldr_section *)((const char *)e + secs[i].off);
		uint64_t a, o, sz;
		bool have = readelf_section(path, secs[i].name, &a, &o, &sz);
		CHECK(s->present == have, "%s %s: present %d, readelf %d", path, secs[i].name,
		      s->present, have);
		if (!have || !s->present)
			continue;
		CHECK_U64(s->addr, a, secs[i].name);
		CHECK_U64(s->file_off, o, secs[i].name);
		if (!s->was_compressed)
			CHECK_U64(s->len, sz, secs[i].name);
	}
	char want[256], got[2 * LDR_MAX_BUILD_ID + 1];
	readelf_build_id(path, want);
	to_hex(e->build_id, e->build_id_len, got);
	CHECK_STR(got, want, "build-id vs readelf -n");
}

static void same_fields(const struct ldr_elf *a, const struct ldr_elf *b, const char *ctx)
{
	CHECK(a->machine == b->machine && a->type == b->type && a->elf_class == b->elf_class &&
		      a->addr_size == b->addr_size && a->entry == b->entry && a->arch == b->arch,
	      "%s: identity", ctx);
	CHECK(a->nsegs == b->nsegs && a->min_vaddr == b->min_vaddr &&
		      (a->nsegs == 0 || memcmp(a->segs, b->segs, a->nsegs * sizeof(*a->segs)) == 0),
	      "%s: segments", ctx);
	CHECK(a->has_eh_frame_hdr_seg == b->has_eh_frame_hdr_seg &&
		      a->eh_frame_hdr_vaddr == b->eh_frame_hdr_vaddr &&
		      a->eh_frame_hdr_memsz == b->eh_frame_hdr_memsz,
	      "%s: PT_GNU_EH_FRAME", ctx);
	const struct ldr_section *sa[] = { &a->eh_frame, &a->eh_frame_hdr, &a->debug_frame, &a->text, &a->got };
	const struct ldr_section *sb[] = { &b->eh_frame, &b->eh_frame_hdr, &b->debug_frame, &b->text, &b->got };
	for (size_t i = 0; i < BK_ARRAY_LEN(sa); i++) {
		CHECK(sa[i]->present == sb[i]->present && sa[i]->len == sb[i]->len &&
			      sa[i]->addr == sb[i]->addr && sa[i]->file_off == sb[i]->file_off &&
			      sa[i]->was_compressed == sb[i]->was_compressed &&
			      (!sa[i]->data) == (!sb[i]->data) &&
			      (!sa[i]->data || memcmp(sa[i]->data, sb[i]->data, sa[i]->len) == 0),
		      "%s: section %zu", ctx, i);
	}
	CHECK(a->build_id_len == b->build_id_len &&
		      memcmp(a->build_id, b->build_id, a->build_id_len) == 0,
	      "%s: build-id", ctx);
	CHECK((!a->debuglink && !b->debuglink) ||
		      (a->debuglink && b->debuglink && strcmp(a->debuglink, b->debuglink) == 0 &&
		       a->debuglink_crc == b->debuglink_crc),
	      "%s: debuglink", ctx);
}

/* A copy without section headers finds .eh_frame_hdr and .eh_frame through
 * PT_GNU_EH_FRAME, at the same addresses and with the same bytes. */
static void check_no_shdrs(const uint8_t *img, size_t len, const struct ldr_elf *orig, const char *ctx)
{
	uint8_t *c = malloc(len);
	memcpy(c, img, len);
	if (orig->elf_class == ELFCLASS64) {
		put(c + offsetof(Elf64_Ehdr, e_shoff), 0, 8);
		put(c + offsetof(Elf64_Ehdr, e_shnum), 0, 2);
		put(c + offsetof(Elf64_Ehdr, e_shstrndx), 0, 2);
	} else {
		put(c + offsetof(Elf32_Ehdr, e_shoff), 0, 4);
		put(c + offsetof(Elf32_Ehdr, e_shnum), 0, 2);
		put(c + offsetof(Elf32_Ehdr, e_shstrndx), 0, 2);
	}
	struct ldr_elf *e = NULL;
	int err = ldr_open_memory(c, len, &e);
	CHECK_INT(err, 0, ctx);
	free(c);
	if (err)
		return;
	CHECK(e->eh_frame_hdr.present && e->eh_frame_hdr.addr == orig->eh_frame_hdr.addr &&
		      e->eh_frame_hdr.len == orig->eh_frame_hdr.len &&
		      memcmp(e->eh_frame_hdr.data, orig->eh_frame_hdr.data, e->eh_frame_hdr.len) == 0,
	      "%s: .eh_frame_hdr via PT_GNU_EH_FRAME", ctx);
	CHECK(e->eh_frame.present && e->eh_frame.addr == orig->eh_frame.addr &&
		      e->eh_frame.file_off == orig->eh_frame.file_off &&
		      e->eh_frame.len >= orig->eh_frame.len &&
		      memcmp(e->eh_frame.data, orig->eh_frame.data, orig->eh_frame.len) == 0,
	      "%s: .eh_frame via eh_frame_ptr (addr %" PRIx64 " vs %" PRIx64 ", len %zu vs %zu)", ctx,
	      e->eh_frame.addr, orig->eh_frame.addr, e->eh_frame.len, orig->eh_frame.len);
	CHECK(!e->text.present && !e->got.present && !e->debuglink, "%s: no sections", ctx);
	CHECK(e->build_id_len == orig->build_id_len &&
		      memcmp(e->build_id, orig->build_id, e->build_id_len) == 0,
	      "%s: build-id from PT_NOTE", ctx);
	ldr_close(e);
}

static void test_system_binary(const char *path, bool required)
{
	struct ldr_elf *e = NULL;
	int err = ldr_open_path(path, &e);
	if (err && !required) {
		printf("skip: %s (%s)\n", path, bk_strerror(err));
		return;
	}
	CHECK_INT(err, 0, path);
	if (err)
		return;
	CHECK_STR(e->path, path, "path kept");
#if defined(__x86_64__)
	CHECK_INT(e->machine, EM_X86_64, path);
	CHECK(e->arch && e->arch->arch == BK_ARCH_X86_64, "%s: arch", path);
#elif defined(__aarch64__)
	CHECK_INT(e->machine, EM_AARCH64, path);
	CHECK(e->arch && e->arch->arch == BK_ARCH_AARCH64, "%s: arch", path);
#endif
	CHECK_INT(e->elf_class, ELFCLASS64, path);
	CHECK_INT(e->addr_size, 8, path);
	CHECK(e->eh_frame.present && e->eh_frame.data && e->eh_frame.len > 0, "%s: .eh_frame", path);
	CHECK(e->eh_frame_hdr.present && e->eh_frame_hdr.data, "%s: .eh_frame_hdr", path);
	CHECK(e->has_eh_frame_hdr_seg && e->eh_frame_hdr_vaddr == e->eh_frame_hdr.addr,
	      "%s: PT_GNU_EH_FRAME matches the section", path);
	CHECK_INT(e->build_id_len, 20, path);
	CHECK(e->nsegs >= 2, "%s: PT_LOADs", path);
	check_against_readelf(path, e);

	/* Bias: the lowest segment mapped at B means link address A is at A + bias. */
	uint64_t base = 0x7f1234560000ull;
	int64_t bias = ldr_load_bias(e, base);
	CHECK_U64((uint64_t)bias, base - e->min_vaddr, "bias");
	CHECK_U64(e->min_vaddr + (uint64_t)bias, base, "bias maps min_vaddr to the base");
	if (e->type == ET_EXEC)
		CHECK_INT(ldr_load_bias(e, e->min_vaddr), 0, "ET_EXEC at its link address");

	/* Segment reads agree with the section bytes, .bss reads zero. */
	uint8_t b[16];
	CHECK_INT(ldr_read_vaddr(e, e->eh_frame_hdr.addr, b, 4), 0, "read hdr");
	CHECK(memcmp(b, e->eh_frame_hdr.data, 4) == 0, "read_vaddr == section bytes");
	CHECK_INT(ldr_read_vaddr(e, e->text.addr + 8, b, 8), 0, "read .text");
	CHECK(memcmp(b, e->text.data + 8, 8) == 0, "read .text bytes");
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct ldr_segment *s = &e->segs[i];
		if (s->memsz > s->filesz + 8) {
			memset(b, 0x55, 8);
			CHECK_INT(ldr_read_vaddr(e, s->vaddr + s->filesz, b, 8), 0, "read .bss");
			CHECK(b[0] == 0 && b[7] == 0, "%s: .bss reads zero", path);
		}
	}
	const struct ldr_segment *last = &e->segs[e->nsegs - 1];
	CHECK_INT(ldr_read_vaddr(e, last->vaddr + last->memsz + 0x100000, b, 1), BK_E_MEMORY,
		  "read past the segments");

	size_t len;
	uint8_t *img = slurp(path, &len);
	CHECK(img != NULL, "slurp %s", path);
	if (img) {
		struct ldr_elf *m = NULL;
		CHECK_INT(ldr_open_memory(img, len, &m), 0, "same bytes from memory");
		if (m) {
			same_fields(e, m, path);
			CHECK(m->path == NULL, "memory: no path");
			ldr_close(m);
		}
		check_no_shdrs(img, len, e, path);
		free(img);
	}
	ldr_close(e);
}

/* ---- Built inputs ----------------------------------------------------------- */

static const char many_funcs_c[] =
	"#define F(n) int f##n(int x) { volatile int y = x * n; return y + f_ext(y); }\n"
	"int f_ext(int);\n"
	"#define T(n) F(n##0) F(n##1) F(n##2) F(n##3) F(n##4) F(n##5) F(n##6) F(n##7) F(n##8) F(n##9)\n"
	"T(1) T(2) T(3) T(4) T(5) T(6) T(7) T(8) T(9) T(10) T(11) T(12) T(13) T(14) T(15)\n";

static const char prog_c[] =
	"#include <stdio.h>\n"
	"static char big[100000];\n"
	"__attribute__((noinline)) int g(int x) { big[x] = (char)x; return big[x / 2] + 1; }\n"
	"int main(int argc, char **argv) { (void)argv; printf(\"%d\\n\", g(argc)); return 0; }\n";

static void test_elf32(void)
{
	if (!run("gcc -m32 -O1 -c -o %s %s", tpath("f32.o"), tpath("many.c"))) {
		printf("skip: gcc -m32 unavailable; ELF32 covered by the hand-built image\n");
		return;
	}
	struct ldr_elf *e = NULL;
	CHECK_INT(ldr_open_path(tpath("f32.o"), &e), 0, "f32.o");
	if (e) {
		CHECK_INT(e->elf_class, ELFCLASS32, "f32.o class");
		CHECK_INT(e->addr_size, 4, "f32.o addr_size");
		CHECK_INT(e->machine, EM_386, "f32.o machine");
		CHECK_INT(e->type, ET_REL, "f32.o type");
		CHECK(e->arch == NULL, "i386 has no arch");
		CHECK_INT(e->nsegs, 0, "ET_REL has no segments");
		check_against_readelf(tpath("f32.o"), e);
		ldr_close(e);
	}
	/* Linked without libc, so it needs no 32-bit runtime. */
	if (!run("gcc -m32 -O1 -c -o %s %s", tpath("m32.o"), tpath("many.c")) ||
	    !run("ld -m elf_i386 --eh-frame-hdr --build-id -e f10 -o %s %s --unresolved-symbols=ignore-all",
		 tpath("m32"), tpath("m32.o"))) {
		printf("skip: ld -m elf_i386\n");
		return;
	}
	CHECK_INT(ldr_open_path(tpath("m32"), &e), 0, "m32");
	if (!e)
		return;
	CHECK_INT(e->type, ET_EXEC, "m32 type");
	CHECK(e->has_eh_frame_hdr_seg && e->eh_frame.present && e->eh_frame_hdr.present, "m32 eh");
	check_against_readelf(tpath("m32"), e);
	CHECK_INT(ldr_load_bias(e, e->min_vaddr), 0, "m32 bias");
	size_t len;
	uint8_t *img = slurp(tpath("m32"), &len);
	if (img) {
		check_no_shdrs(img, len, e, "m32 without section headers");
		free(img);
	}
	ldr_close(e);
}

static void test_aarch64(void)
{
	if (!run("aarch64-linux-gnu-gcc -O2 -c -o %s %s", tpath("a64.o"), tpath("prog.c"))) {
		printf("skip: aarch64-linux-gnu-gcc\n");
		return;
	}
	struct ldr_elf *e = NULL;
	CHECK_INT(ldr_open_path(tpath("a64.o"), &e), 0, "a64.o");
	if (e) {
		CHECK_INT(e->machine, EM_AARCH64, "a64.o machine");
		CHECK(e->arch && e->arch->arch == BK_ARCH_AARCH64, "a64.o arch");
		CHECK_INT(e->elf_class, ELFCLASS64, "a64.o class");
		check_against_readelf(tpath("a64.o"), e);
		ldr_close(e);
	}
	if (!run("aarch64-linux-gnu-gcc -O2 -Wl,--build-id -o %s %s", tpath("a64"), tpath("prog.c"))) {
		printf("skip: aarch64 link\n");
		return;
	}
	CHECK_INT(ldr_open_path(tpath("a64"), &e), 0, "a64");
	if (!e)
		return;
	CHECK(e->arch && e->arch->arch == BK_ARCH_AARCH64, "a64 arch");
	CHECK(e->eh_frame.present && e->has_eh_frame_hdr_seg, "a64 eh");
	check_against_readelf(tpath("a64"), e);
	size_t len;
	uint8_t *img = slurp(tpath("a64"), &len);
	if (img) {
		check_no_shdrs(img, len, e, "a64 without section headers");
		free(img);
	}
	ldr_close(e);
}

/* Offset of the section header of NAME in an ELF64 image (via readelf). */
static bool shdr_of(const char *path, const char *name, uint64_t *shdr_off)
{
	char cmd[600], line[1024];
	snprintf(cmd, sizeof(cmd), "readelf -hW '%s'", path);
	FILE *p = popen(cmd, "r");
	unsigned long long shoff = 0;
	while (p && fgets(line, sizeof(line), p))
		sscanf(line, " Start of section headers: %llu", &shoff);
	if (p)
		pclose(p);
	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", path);
	p = popen(cmd, "r");
	bool found = false;
	while (p && fgets(line, sizeof(line), p)) {
		unsigned idx;
		char n[256];
		char *lb = strchr(line, '[');
		if (!found && lb && sscanf(lb + 1, "%u] %255s", &idx, n) == 2 && strcmp(n, name) == 0) {
			*shdr_off = shoff + (uint64_t)idx * sizeof(Elf64_Shdr);
			found = true;
		}
	}
	if (p)
		pclose(p);
	return found && shoff;
}

static void test_compressed(void)
{
	const char *plain = tpath("many.o"), *z = tpath("many-z.o"), *zg = tpath("many-zg.o");
	if (!run("gcc -g -O1 -fno-asynchronous-unwind-tables -c -o %s %s", plain, tpath("many.c")) ||
	    !run("objcopy --compress-debug-sections=zlib %s %s", plain, z)) {
		CHECK(0, "cannot build the compressed-section input");
		return;
	}
	struct ldr_elf *p = NULL, *c = NULL;
	CHECK_INT(ldr_open_path(plain, &p), 0, "many.o");
	CHECK_INT(ldr_open_path(z, &c), 0, "many-z.o");
	if (!p || !c) {
		ldr_close(p);
		ldr_close(c);
		return;
	}
	CHECK(p->debug_frame.present && !p->debug_frame.was_compressed && p->debug_frame.len > 1000,
	      "plain .debug_frame (%zu bytes)", p->debug_frame.len);
	CHECK(!p->eh_frame.present, "-fno-asynchronous-unwind-tables: no .eh_frame");
	CHECK(c->debug_frame.present && c->debug_frame.was_compressed, "zlib .debug_frame");
	CHECK(c->debug_frame.len == p->debug_frame.len &&
		      memcmp(c->debug_frame.data, p->debug_frame.data, p->debug_frame.len) == 0,
	      "inflated .debug_frame equals the uncompressed one");
	check_against_readelf(z, c);

	/* Damage the compression header / stream in memory. */
	uint64_t sh;
	size_t len;
	uint8_t *img = slurp(z, &len);
	if (img && shdr_of(z, ".debug_frame", &sh) && sh + sizeof(Elf64_Shdr) <= len) {
		uint64_t off = c->debug_frame.file_off;
		uint64_t size;
		memcpy(&size, img + sh + offsetof(Elf64_Shdr, sh_size), 8);
		static const struct { unsigned at, n; uint64_t val; int want; bool present; const char *name; } rows[] = {
			{ 8, 8, 0, BK_E_CORRUPT, false, "ch_size + 1" },     /* val 0: +1 below */
			{ 8, 8, 1, BK_E_CORRUPT, false, "ch_size 1" },
			{ 8, 8, (uint64_t)1 << 31, BK_E_CORRUPT, false, "ch_size 2 GiB" },
			{ 8, 8, UINT64_MAX, BK_E_CORRUPT, false, "ch_size huge" },
			{ 0, 4, 2, BK_E_CORRUPT, false, "ELFCOMPRESS_ZSTD over a zlib stream" },
			{ 0, 4, 77, 0, false, "unknown ch_type: absent" },
			{ 24, 2, 0xffff, BK_E_CORRUPT, false, "bad zlib header" },
		};
		for (size_t i = 0; i < BK_ARRAY_LEN(rows); i++) {
			uint8_t *d = malloc(len);
			memcpy(d, img, len);
			uint64_t v = rows[i].val;
			if (i == 0)
				v = c->debug_frame.len + 1;
			put(d + off + rows[i].at, v, rows[i].n);
			struct ldr_elf *x = NULL;
			CHECK_INT(ldr_open_memory(d, len, &x), rows[i].want, rows[i].name);
			if (x) {
				CHECK(!x->debug_frame.present && !x->debug_frame.data, "%s", rows[i].name);
				CHECK(x->unknown_compression == (rows[i].val == 77), "%s: counted",
				      rows[i].name);
				ldr_close(x);
			}
			free(d);
		}
		/* Truncated stream: shrink sh_size. */
		uint8_t *d = malloc(len);
		memcpy(d, img, len);
		put(d + sh + offsetof(Elf64_Shdr, sh_size), size - 8, 8);
		struct ldr_elf *x = NULL;
		CHECK_INT(ldr_open_memory(d, len, &x), BK_E_CORRUPT, "truncated zlib stream");
		put(d + sh + offsetof(Elf64_Shdr, sh_size), 10, 8);
		CHECK_INT(ldr_open_memory(d, len, &x), BK_E_CORRUPT, "shorter than Elf64_Chdr");
		free(d);
	} else {
		CHECK(0, "cannot locate .debug_frame header in %s", z);
	}
	free(img);

	/* The zstd flavour (binutils 2.40's objcopy): the same bytes. */
	if (run("objcopy --compress-debug-sections=zstd %s %s", plain, tpath("many-zstd.o"))) {
		struct ldr_elf *x = NULL;
		CHECK_INT(ldr_open_path(tpath("many-zstd.o"), &x), 0, "zstd");
		if (x) {
			CHECK(x->debug_frame.present && x->debug_frame.was_compressed &&
				      x->debug_frame.len == p->debug_frame.len &&
				      memcmp(x->debug_frame.data, p->debug_frame.data,
					     p->debug_frame.len) == 0 &&
				      x->unknown_compression == 0,
			      "zstd .debug_frame decompressed, equal to the uncompressed one");
			ldr_close(x);
		}
		/* A damaged zstd stream: its frame's magic number changed. */
		size_t zl;
		uint8_t *zi = slurp(tpath("many-zstd.o"), &zl);
		struct ldr_elf *zx = NULL;
		if (zi && ldr_open_memory(zi, zl, &zx) == 0 && zx->debug_frame.present) {
			uint64_t at = zx->debug_frame.file_off + sizeof(Elf64_Chdr);
			ldr_close(zx);
			zx = NULL;
			zi[at] ^= 0x5a;
			CHECK_INT(ldr_open_memory(zi, zl, &zx), BK_E_CORRUPT, "a damaged zstd frame");
		} else {
			CHECK(0, "many-zstd.o from memory");
		}
		ldr_close(zx);
		free(zi);
	} else {
		CHECK(0, "objcopy --compress-debug-sections=zstd");
	}

	/* Legacy .zdebug_frame. */
	if (run("objcopy --compress-debug-sections=zlib-gnu %s %s", plain, zg) &&
	    run("readelf -SW %s | grep -q zdebug_frame", zg)) {
		struct ldr_elf *g = NULL;
		CHECK_INT(ldr_open_path(zg, &g), 0, "zlib-gnu");
		if (g) {
			CHECK(g->debug_frame.present && g->debug_frame.was_compressed &&
				      g->debug_frame.len == p->debug_frame.len &&
				      memcmp(g->debug_frame.data, p->debug_frame.data, p->debug_frame.len) == 0,
			      ".zdebug_frame inflated");
			ldr_close(g);
		}
	} else {
		printf("skip: objcopy zlib-gnu\n");
	}
	ldr_close(p);
	ldr_close(c);
}

static void test_debug_files(void)
{
	const char *d = tpath("d"), *r = tpath("root"), *empty = tpath("empty-root");
	if (!run("mkdir -p %s/.debug %s %s", d, r, empty) ||
	    !run("gcc -g -O1 -fno-asynchronous-unwind-tables -Wl,--build-id=sha1 -o %s/prog %s", d, tpath("prog.c")) ||
	    !run("objcopy --only-keep-debug %s/prog %s/prog.debug", d, d) ||
	    !run("cd %s && objcopy --strip-debug --add-gnu-debuglink=prog.debug prog prog.stripped", d)) {
		CHECK(0, "cannot build the debug-file inputs");
		return;
	}
	char sp[600], dbg[600];
	snprintf(sp, sizeof(sp), "%s/prog.stripped", d);
	snprintf(dbg, sizeof(dbg), "%s/prog.debug", d);

	struct ldr_elf *s = NULL, *x = NULL;
	CHECK_INT(ldr_open_path(sp, &s), 0, "prog.stripped");
	if (!s)
		return;
	check_against_readelf(sp, s);
	CHECK_STR(s->debuglink, "prog.debug", "debuglink name");
	size_t dlen;
	uint8_t *dbytes = slurp(dbg, &dlen);
	CHECK(dbytes && s->debuglink_crc == ldr_crc32(0, dbytes, dlen), "debuglink CRC");
	CHECK(dbytes && (uint32_t)crc32(0, dbytes, (uInt)dlen) == s->debuglink_crc, "CRC == zlib crc32");
	free(dbytes);
	CHECK_U64(ldr_crc32(0, (const uint8_t *)"123456789", 9), 0xcbf43926u, "CRC-32 check value");
	CHECK_U64(ldr_crc32(ldr_crc32(0, (const uint8_t *)"1234", 4), (const uint8_t *)"56789", 5),
		  0xcbf43926u, "CRC-32 chained");
	CHECK_U64(ldr_crc32(0, NULL, 0), 0, "CRC-32 of nothing");

	/* The debug file itself: .eh_frame is NOBITS there, .debug_frame real. */
	CHECK_INT(ldr_open_path(dbg, &x), 0, "prog.debug");
	if (x) {
		CHECK(!x->eh_frame.present && !x->eh_frame.data && x->eh_frame.len == 0,
		      "NOBITS .eh_frame is absent");
		CHECK(!x->eh_frame_hdr.present && !x->eh_frame_hdr.data, "NOBITS .eh_frame_hdr is absent");
		CHECK(x->debug_frame.present && x->debug_frame.data && x->debug_frame.len > 0,
		      ".debug_frame in the debug file");
		CHECK(x->build_id_len == s->build_id_len &&
			      memcmp(x->build_id, s->build_id, s->build_id_len) == 0,
		      "debug file has the same build-id");
		ldr_close(x);
	}

	/* 1. By build-id under a private root. */
	char hex[2 * LDR_MAX_BUILD_ID + 1], bid_path[900];
	to_hex(s->build_id, s->build_id_len, hex);
	snprintf(bid_path, sizeof(bid_path), "%s/.build-id/%.2s/%s.debug", r, hex, hex + 2);
	run("mkdir -p %s/.build-id/%.2s && cp %s %s", r, hex, dbg, bid_path);
	run("mv %s %s/prog.debug.away", dbg, d);
	CHECK_INT(ldr_open_debug_file(s, r, &x), 0, "by build-id");
	if (x) {
		CHECK_STR(x->path, bid_path, "build-id path");
		CHECK(x->debug_frame.present, "found debug file has .debug_frame");
		ldr_close(x);
	}
	/* A wrong file at the build-id path is rejected. */
	run("cp /bin/true %s", bid_path);
	CHECK_INT(ldr_open_debug_file(s, r, &x), BK_E_NOT_FOUND, "wrong build-id rejected");
	CHECK(x == NULL, "out cleared");

	/* 2. By debuglink: DIR/NAME, DIR/.debug/NAME, ROOT/DIR/NAME, in that order. */
	char real_d[PATH_MAX];
	CHECK(realpath(d, real_d) != NULL, "realpath");
	static const char *const where[] = { "%s/prog.debug", "%s/.debug/prog.debug", "%s%s/prog.debug" };
	for (int i = 0; i < 3; i++) {
		char dst[PATH_MAX + 700];
		if (i < 2)
			snprintf(dst, sizeof(dst), where[i], d);
		else
			snprintf(dst, sizeof(dst), where[i], empty, real_d);
		run("mkdir -p \"$(dirname %s)\" && cp %s/prog.debug.away %s", dst, d, dst);
		CHECK_INT(ldr_open_debug_file(s, empty, &x), 0, where[i]);
		if (x) {
			char want[PATH_MAX + 800];
			if (i == 0)
				snprintf(want, sizeof(want), "%s/prog.debug", real_d);
			else if (i == 1)
				snprintf(want, sizeof(want), "%s/.debug/prog.debug", real_d);
			else
				snprintf(want, sizeof(want), "%s", dst);
			CHECK_STR(x->path, want, "debuglink candidate path");
			ldr_close(x);
		}
		run("rm -f %s", dst);
	}
	CHECK_INT(ldr_open_debug_file(s, empty, &x), BK_E_NOT_FOUND, "nothing left");

	/* 3. No build-id: the CRC decides, and a wrong CRC is rejected. */
	const char *e = tpath("nb");
	if (run("mkdir -p %s && gcc -g -O1 -fno-asynchronous-unwind-tables -Wl,--build-id=none -o %s/nb %s", e, e, tpath("prog.c")) &&
	    run("cd %s && objcopy --only-keep-debug nb nb.debug && objcopy --strip-debug --add-gnu-debuglink=nb.debug nb nb.stripped", e)) {
		char nbs[600];
		snprintf(nbs, sizeof(nbs), "%s/nb.stripped", e);
		struct ldr_elf *n = NULL;
		CHECK_INT(ldr_open_path(nbs, &n), 0, "nb.stripped");
		if (n) {
			CHECK_INT(n->build_id_len, 0, "no build-id");
			CHECK_INT(ldr_open_debug_file(n, empty, &x), 0, "by debuglink CRC");
			if (x) {
				CHECK(x->debug_frame.present, "nb.debug .debug_frame");
				ldr_close(x);
			}
			run("cd %s && cp nb.debug nb.debug.good && printf x >> nb.debug", e);
			CHECK_INT(ldr_open_debug_file(n, empty, &x), BK_E_NOT_FOUND, "wrong CRC rejected");
			run("cd %s && mv nb.debug.good nb.debug", e);
			/* A debuglink naming the file itself is never taken. */
			run("cp %s %s/self && cd %s && objcopy --remove-section=.gnu_debuglink self && "
			    "objcopy --add-gnu-debuglink=self self self2 && mv self2 self", nbs, e, e);
			struct ldr_elf *self = NULL;
			snprintf(nbs, sizeof(nbs), "%s/self", e);
			if (ldr_open_path(nbs, &self) == 0) {
				CHECK_INT(ldr_open_debug_file(self, empty, &x), BK_E_NOT_FOUND, "not the file itself");
				ldr_close(self);
			}
			/* Memory images have no directory: only the build-id route. */
			size_t len;
			uint8_t *img = slurp(tpath("nb/nb.stripped"), &len);
			struct ldr_elf *m = NULL;
			if (img && ldr_open_memory(img, len, &m) == 0) {
				CHECK_INT(ldr_open_debug_file(m, empty, &x), BK_E_NOT_FOUND, "memory image");
				ldr_close(m);
			}
			free(img);
			ldr_close(n);
		}
	} else {
		printf("skip: --build-id=none input\n");
	}

	CHECK_INT(ldr_open_debug_file(NULL, NULL, &x), BK_E_INVAL, "NULL elf");
	run("mv %s/prog.debug.away %s", d, dbg);
	ldr_close(s);
}

/* ---- Hostile input ----------------------------------------------------------- */

static void test_bad_paths(void)
{
	struct ldr_elf *e = (struct ldr_elf *)&e;
	CHECK_INT(ldr_open_path(tpath("does-not-exist"), &e), BK_E_IO, "missing path");
	CHECK(e == NULL, "out cleared");
	CHECK_INT(ldr_open_path(tmp, &e), BK_E_IO, "a directory");
	spit(tpath("empty"), "", 0);
	CHECK_INT(ldr_open_path(tpath("empty"), &e), BK_E_NOT_ELF, "empty file");
	spit(tpath("text"), "not an elf\n", 11);
	CHECK_INT(ldr_open_path(tpath("text"), &e), BK_E_NOT_ELF, "not an elf");
	CHECK_INT(ldr_open_memory("not an elf", 10, &e), BK_E_NOT_ELF, "not an elf (memory)");
	CHECK_INT(ldr_open_memory("x", 0, &e), BK_E_NOT_ELF, "empty image");
	CHECK_INT(ldr_open_memory(NULL, 4, &e), BK_E_INVAL, "NULL image");
	CHECK_INT(ldr_open_path(NULL, &e), BK_E_INVAL, "NULL path");
	if (access("/dev/null", R_OK) == 0)
		CHECK_INT(ldr_open_path("/dev/null", &e), BK_E_IO, "not a regular file");
	if (geteuid() != 0) {
		spit(tpath("unreadable"), "\x7f" "ELF", 4);
		chmod(tpath("unreadable"), 0);
		CHECK_INT(ldr_open_path(tpath("unreadable"), &e), BK_E_IO, "unreadable");
	}
}

static void test_truncated(const char *path)
{
	size_t len;
	uint8_t *img = slurp(path, &len);
	CHECK(img != NULL, "slurp %s", path);
	if (!img)
		return;
	size_t max = len < 4096 ? len : 4096;
	int bad = 0;
	for (size_t n = 0; n < max; n++) {
		/* Exact-size heap copy: ASan catches any read past N. */
		uint8_t *c = malloc(n ? n : 1);
		memcpy(c, img, n);
		struct ldr_elf *e = NULL;
		int err = ldr_open_memory(c, n, &e);
		/* Cut inside the magic: not an ELF; anywhere else the section
		 * table at the end of the file is cut: corrupt. */
		int want = n < SELFMAG ? BK_E_NOT_ELF : BK_E_CORRUPT;
		if (err != want) {
			if (bad++ < 5)
				CHECK_INT(err, want, "truncated");
		}
		if (e)
			ldr_close(e);
		free(c);
	}
	CHECK(bad == 0, "%s: %d truncation lengths gave the wrong code", path, bad);
	free(img);
}

/* Random byte flips in the ELF header and the header tables, and a few
 * anywhere: any result, no crash, and whatever opens can be read fully. */
static void test_flips(const char *path, unsigned iters)
{
	size_t len;
	uint8_t *img = slurp(path, &len);
	if (!img || len < sizeof(Elf64_Ehdr)) {
		free(img);
		return;
	}
	Elf64_Ehdr eh;
	memcpy(&eh, img, sizeof(eh));
	uint64_t regions[3][2] = {
		{ 0, sizeof(Elf64_Ehdr) },
		{ eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) },
		{ eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) },
	};
	uint32_t rng = 12345;
	unsigned opened = 0, sum = 0, bad_code = 0;
	uint8_t *c = malloc(len);
	for (unsigned it = 0; it < iters; it++) {
		memcpy(c, img, len);
		unsigned nflips = 1 + it % 4;
		for (unsigned k = 0; k < nflips; k++) {
			rng = rng * 1103515245u + 12345u;
			unsigned r = rng >> 8;
			uint64_t at;
			if (k == 3)
				at = r % len;
			else {
				unsigned reg = r % 3;
				at = regions[reg][0] + (r / 3) % (regions[reg][1] ? regions[reg][1] : 1);
			}
			if (at < len) {
				rng = rng * 1103515245u + 12345u;
				c[at] = (it & 1) ? (uint8_t)(rng >> 16) : (uint8_t)(c[at] ^ (1u << (rng >> 16) % 8));
			}
		}
		struct ldr_elf *e = NULL;
		int err = ldr_open_memory(c, len, &e);
		if (err > 0 || (err < 0 && err != BK_E_CORRUPT && err != BK_E_NOT_ELF &&
				 err != BK_E_UNSUPPORTED && err != BK_E_NOMEM))
			bad_code++;
		if (e) {
			opened++;
			sum += touch_all(e);
			ldr_close(e);
		}
	}
	free(c);
	free(img);
	CHECK_INT(bad_code, 0, "flips: unexpected error codes");
	printf("flips %s: %u of %u opened (%u)\n", path, opened, iters, sum & 1);
}

/* ---- Allocation failure ----------------------------------------------------------- */

typedef int (*open_fn)(const void *arg, struct ldr_elf **out);

static int open_path_fn(const void *arg, struct ldr_elf **out)
{
	return ldr_open_path(arg, out);
}

struct mem_arg { const uint8_t *p; size_t len; };

static int open_mem_fn(const void *arg, struct ldr_elf **out)
{
	const struct mem_arg *m = arg;
	return ldr_open_memory(m->p, m->len, out);
}

static int open_debug_fn(const void *arg, struct ldr_elf **out)
{
	const void *const *a = arg;
	return ldr_open_debug_file(a[0], a[1], out);
}

static void alloc_failures(open_fn fn, const void *arg, const char *ctx)
{
	unsigned n;
	int wrong = 0;
	for (n = 1; n < 500; n++) {
		struct ldr_elf *e = NULL;
		base_alloc_fail_after(n);
		int err = fn(arg, &e);
		base_alloc_fail_after(0);
		if (err == 0) {
			ldr_close(e);
			break;
		}
		if (err != BK_E_NOMEM && wrong++ < 3)
			CHECK_INT(err, BK_E_NOMEM, ctx);
		CHECK(e == NULL, "%s: out set on failure", ctx);
	}
	CHECK(n > 1 && n < 500, "%s: succeeded after %u injected failures", ctx, n - 1);
	CHECK_INT(wrong, 0, ctx);
}

static void test_alloc_failures(void)
{
	alloc_failures(open_path_fn, tpath("many-z.o"), "open compressed");
	alloc_failures(open_path_fn, "/bin/true", "open /bin/true");
	size_t len;
	uint8_t *img = slurp(tpath("many-z.o"), &len);
	if (img) {
		struct mem_arg m = { img, len };
		alloc_failures(open_mem_fn, &m, "open memory");
		free(img);
	}
	if (access(tpath("many-zg.o"), R_OK) == 0)
		alloc_failures(open_path_fn, tpath("many-zg.o"), "open .zdebug");

	struct ldr_elf *s = NULL;
	if (ldr_open_path(tpath("d/prog.stripped"), &s) == 0) {
		const void *a[2] = { s, tpath("root") }; /* the build-id route (fixed up below) */
		char hex[2 * LDR_MAX_BUILD_ID + 1];
		to_hex(s->build_id, s->build_id_len, hex);
		run("cp %s %s/.build-id/%.2s/%s.debug", tpath("d/prog.debug"), tpath("root"), hex, hex + 2);
		alloc_failures(open_debug_fn, a, "debug by build-id");
		a[1] = tpath("empty-root"); /* the debuglink route: DIR/NAME */
		alloc_failures(open_debug_fn, a, "debug by debuglink");
		ldr_close(s);
	}
	if (ldr_open_path(tpath("nb/nb.stripped"), &s) == 0) {
		const void *a[2] = { s, tpath("empty-root") };
		alloc_failures(open_debug_fn, a, "debug by CRC");
		ldr_close(s);
	}
}

/* ldr_open_loaded: a file's loaded image (segments at their virtual
 * addresses, the gaps holding whatever a process has there) opens with the
 * same unwind tables as the file. */
static void test_loaded_image(const char *path)
{
	size_t len;
	uint8_t *file = slurp(path, &len);
	struct ldr_elf *f = NULL;
	CHECK(file && ldr_open_memory(file, len, &f) == 0, "%s opens", path);
	if (!f) {
		free(file);
		return;
	}
	uint64_t span = 0;
	for (size_t i = 0; i < f->nsegs; i++)
		if (f->segs[i].vaddr + f->segs[i].memsz - f->min_vaddr > span)
			span = f->segs[i].vaddr + f->segs[i].memsz - f->min_vaddr;
	span = (span + 4095) & ~(uint64_t)4095;
	uint8_t *img = malloc(span);
	memset(img, 0xa5, span); /* not zeros: junk where the section table was */
	for (size_t i = 0; i < f->nsegs; i++)
		memcpy(img + (f->segs[i].vaddr - f->min_vaddr), file + f->segs[i].file_off,
		       f->segs[i].filesz);
	struct ldr_elf *m = NULL;
	CHECK(ldr_open_loaded(img, span, NULL, 0, &m) == 0, "%s: its loaded image opens", path);
	if (m) {
		CHECK(m->eh_frame.present && m->eh_frame.len >= f->eh_frame.len &&
		      memcmp(m->eh_frame.data, f->eh_frame.data, f->eh_frame.len) == 0,
		      "%s: the image's .eh_frame is the file's", path);
		CHECK(m->eh_frame.addr == f->eh_frame.addr && m->eh_frame_hdr.present &&
		      m->eh_frame_hdr.addr == f->eh_frame_hdr.addr,
		      "%s: at the same addresses, with .eh_frame_hdr", path);
		CHECK(m->build_id_len == f->build_id_len &&
		      memcmp(m->build_id, f->build_id, f->build_id_len) == 0,
		      "%s: the same build-id", path);
		ldr_close(m);
	}
	/* Cut short anywhere, or not an ELF image: an error, never a crash. */
	for (size_t cut = 0; cut < span; cut += cut < 256 ? 7 : 4093) {
		m = NULL;
		int err = ldr_open_loaded(img, cut, NULL, 0, &m);
		CHECK(err == 0 ? m != NULL : m == NULL, "%s: image cut at %zu", path, cut);
		ldr_close(m);
	}
	/* Pages flagged absent: outside the unwind tables they do not matter;
	 * a page of .eh_frame or .eh_frame_hdr absent refuses the image. */
	size_t npages = span / 4096;
	bool *absent = calloc(npages, sizeof(bool));
	uint64_t eh_lo = f->eh_frame.addr - f->min_vaddr, eh_hi = eh_lo + f->eh_frame.len;
	uint64_t hdr_lo = f->eh_frame_hdr.addr - f->min_vaddr;
	for (size_t p = 1; p < npages; p++)
		absent[p] = (p + 1) * 4096 <= hdr_lo || p * 4096 >= eh_hi; /* .eh_frame* kept */
	if (f->eh_frame_hdr.addr > f->eh_frame.addr)
		for (size_t p = 1; p < npages; p++)
			absent[p] = (p + 1) * 4096 <= eh_lo ||
				    p * 4096 >= hdr_lo + f->eh_frame_hdr.len;
	m = NULL;
	CHECK(ldr_open_loaded(img, span, absent, 4096, &m) == 0 && m && m->eh_frame.present,
	      "%s: opens with only its headers and unwind tables present", path);
	ldr_close(m);
	memset(absent, 0, npages);
	absent[(eh_lo + f->eh_frame.len / 2) / 4096] = true;
	m = NULL;
	CHECK(ldr_open_loaded(img, span, absent, 4096, &m) == BK_E_MEMORY && !m,
	      "%s: refused when a page of .eh_frame is absent", path);
	memset(absent, 0, npages);
	absent[hdr_lo / 4096] = true;
	CHECK(hdr_lo / 4096 == 0 || ldr_open_loaded(img, span, absent, 4096, &m) == BK_E_MEMORY,
	      "%s: refused when the page of .eh_frame_hdr is absent", path);
	free(absent);
	img[0] = 0;
	CHECK(ldr_open_loaded(img, span, NULL, 0, &m) == BK_E_NOT_ELF, "%s: not an ELF image", path);
	free(img);
	ldr_close(f);
	free(file);
}

int main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/bk_test_loader_XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	spit(tpath("many.c"), many_funcs_c, sizeof(many_funcs_c) - 1);
	spit(tpath("prog.c"), prog_c, sizeof(prog_c) - 1);

	test_mini_fields();
	test_mini_encodings();
	test_mini_corrupt();
	/* Binaries of this host's architecture: the C library and the dynamic
	 * linker this program runs with (under qemu-user, /bin/true is the
	 * emulating machine's, of another architecture). */
	Dl_info libc_info, ldso_info;
	CHECK(dladdr((void *)&printf, &libc_info) && libc_info.dli_fname &&
		      libc_info.dli_fname[0] == '/', "dladdr: the C library's path");
	CHECK(dladdr((void *)&_dl_find_object, &ldso_info) && ldso_info.dli_fname &&
		      ldso_info.dli_fname[0] == '/', "dladdr: the dynamic linker's path");
	test_system_binary(libc_info.dli_fname, true);
	test_system_binary(ldso_info.dli_fname, true);
	test_loaded_image("/usr/lib/x86_64-linux-gnu/libc.so.6");
	test_loaded_image("/bin/true");
	test_elf32();
	test_aarch64();
	test_compressed();
	test_debug_files();
	test_bad_paths();
	test_truncated(tpath("many.o"));
	test_truncated("/bin/true");
	test_flips("/bin/true", 3000);
	test_flips(tpath("many-z.o"), 3000);
	test_alloc_failures();

	run("rm -rf %s", tmp);
	return check_summary();
}
