/* backstep core CORE [EXE]: every thread's stack in a core file, printed as
 * `backstep pid` prints a live process's. Problems with the modules (a file
 * not found, a build-id that differs from the core's) are warned about first
 * on stderr; the walk then falls back to frame pointers in those modules. A
 * core whose file does not hold all the memory its headers promise (cut
 * short) is warned about too, and exits 1 whatever the walks found. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "out.h"

#include "../src/base/base.h"

#define USAGE \
	"backstep core [-r|--regs] [-n|--no-symbols] [--no-cache] [--no-debuginfod] [--json] " \
	"[--sysroot DIR] [--perf-map FILE] [--jitdump FILE] CORE [EXE]"

/* Is PATH an ELF file whose e_type is not ET_CORE? (To tell "not a core"
 * from "a core backstep does not read", both BK_E_UNSUPPORTED.) */
static bool elf_but_not_core(const char *path)
{
	unsigned char h[EI_NIDENT + 2];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, h, sizeof(h));
	close(fd);
	if (n != (ssize_t)sizeof(h) || memcmp(h, ELFMAG, SELFMAG) != 0)
		return false;
	unsigned type = h[EI_DATA] == ELFDATA2MSB ? (unsigned)h[16] << 8 | h[17]
						   : (unsigned)h[17] << 8 | h[16];
	return type != ET_CORE;
}

/* Whether the core at PATH ends before the memory its program headers
 * promise (a disk that filled up, a transfer cut short, a size limit):
 * then one warning line says so, with how much is missing, and the caller
 * exits 1 (walks into the missing part end early). The headers were
 * already read by bk_target_open_core; here they are only measured. */
static bool warn_if_cut(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	unsigned char eh[64];
	bool cut = false;
	if (fstat(fd, &st) == 0 && pread(fd, eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
	    !memcmp(eh, ELFMAG, SELFMAG) && eh[EI_DATA] == ELFDATA2LSB) {
		bool is64 = eh[EI_CLASS] == ELFCLASS64;
		uint64_t phoff = is64 ? base_rd_le(eh + 32, 8) : base_rd_le(eh + 28, 4);
		unsigned phentsize = (unsigned)base_rd_le(eh + (is64 ? 54 : 42), 2);
		unsigned phnum = (unsigned)base_rd_le(eh + (is64 ? 56 : 44), 2);
		ssize_t phlen = is64 ? 56 : 32;
		uint64_t size = (uint64_t)st.st_size, want = 0;
		unsigned nload = 0, ncut = 0;
		for (unsigned i = 0; i < phnum && phentsize >= (unsigned)phlen; i++) {
			unsigned char ph[56];
			if (pread(fd, ph, (size_t)phlen, (off_t)(phoff + (uint64_t)i * phentsize)) != phlen)
				break;
			if (base_rd_le(ph, 4) != PT_LOAD)
				continue;
			uint64_t off = is64 ? base_rd_le(ph + 8, 8) : base_rd_le(ph + 4, 4);
			uint64_t filesz = is64 ? base_rd_le(ph + 32, 8) : base_rd_le(ph + 16, 4);
			if (!filesz)
				continue;
			nload++;
			if (off > UINT64_MAX - filesz)
				continue;
			if (off + filesz > size) {
				ncut++;
				want = off + filesz > want ? off + filesz : want;
			}
		}
		if (ncut) {
			cut = true;
			fprintf(stderr, "backstep: warning: %s: truncated core file: it ends at byte "
				"%llu, its memory at byte %llu (%u of %u memory segments cut short or "
				"missing); walks that reach the missing memory end early\n", path,
				(unsigned long long)size, (unsigned long long)want, ncut, nload);
		}
	}
	close(fd);
	return cut;
}

static void core_error(const char *path, int err)
{
	switch (err) {
	case BK_E_NOT_ELF:
		cli_error(path, "not an ELF file");
		return;
	case BK_E_UNSUPPORTED:
		if (elf_but_not_core(path))
			cli_error(path, "not a core file");
		else
			cli_error(path, "unsupported core file (only x86-64 and AArch64 little-endian "
					"ELF64 cores)");
		return;
	case BK_E_CORRUPT:
		cli_error(path, "truncated core file");
		return;
	default:
		cli_file_error(path, err); /* missing, a directory, unreadable */
	}
}

int cmd_core(int argc, char **argv)
{
	struct cli_stack_opts o;
	int first = cli_stack_options(argc, argv, USAGE, false, &o);
	if (first <= 0)
		return first == 0 ? 0 : 2;
	optind = first;
	if (optind >= argc || argc - optind > 2) {
		cli_error("core", "name a core file (usage: " USAGE ")");
		return 2;
	}
	const char *core = argv[optind];
	const char *exe = argc - optind == 2 ? argv[optind + 1] : NULL;
	if (exe) {
		struct stat st;
		if (stat(exe, &st) != 0) {
			cli_error(exe, "%s", strerror(errno));
			return CLI_USAGE;
		}
		if (S_ISDIR(st.st_mode)) {
			cli_error(exe, "is a directory");
			return CLI_USAGE;
		}
	}

	struct bk_target *t;
	struct bk_core_options co = { .size = sizeof(co), .exe = exe, .sysroot = o.sysroot };
	int err = bk_target_open_core_opts(core, &co, &t);
	if (err) {
		core_error(core, err);
		return CLI_USAGE;
	}
	bool cut = warn_if_cut(core);
	cli_print_problems(t);
	int status = cli_print_threads(t, &o);
	bk_target_close(t);
	return cut && status == CLI_OK ? CLI_PROBLEMS : status;
}
