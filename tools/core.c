/* backstep core CORE [EXE]: every thread's stack in a core file, printed as
 * `backstep pid` prints a live process's. Problems with the modules (a file
 * not found, a build-id that differs from the core's) are warned about first
 * on stderr; the walk then falls back to frame pointers in those modules. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "out.h"

#define USAGE "backstep core [-r|--regs] [-n|--no-symbols] [--no-cache] [--no-debuginfod] [--json] CORE [EXE]"

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
			cli_error(path, "unsupported core file (only x86-64 little-endian ELF64 cores)");
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
	int err = bk_target_open_core(core, exe, &t);
	if (err) {
		core_error(core, err);
		return CLI_USAGE;
	}
	cli_print_problems(t);
	int status = cli_print_threads(t, &o);
	bk_target_close(t);
	return status;
}
