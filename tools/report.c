/* backstep report [options] FILE: the samples of a perf.data file (what
 * `perf record --call-graph dwarf` writes; FILE "-": a stream from `perf
 * record -o -`) as named stacks (samples.h), through the output module
 * (frames.h): perf-script (default), folded, json (JSON Lines),
 * speedscope. The file is streamed: memory grows with processes, modules
 * and distinct frames and stacks, not samples. A summary goes to stderr. */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "frames.h"
#include "out.h"
#include "samples.h"


static const char usage[] =
	"backstep report [--format " FR_SAMPLE_FORMATS "] [-o FILE] [--pid PID] [--tid TID]\n"
	"                [--comm NAME] [--no-inline] [-n] [--kernel|--no-kernel] [--no-debuginfod] FILE|-\n"
	"  --format svg: a flame graph in one self-contained SVG file (-o flame.svg, open it\n"
	"                in a browser): hover for samples and share, click to zoom, Search\n"
	"                or Ctrl-F to highlight frames by name";

static int report(struct prof_reader *r, const char *path, const struct smp_opts *o)
{
	enum bk_arch arch = prof_arch(r);
	struct smp *s;
	if (smp_new(arch == BK_ARCH_UNKNOWN ? BK_ARCH_X86_64 : arch, o, smp_kernel_callchains(r),
		    &s) != 0) {
		cli_error(path, "out of memory");
		return 1;
	}
	struct prof_record rec;
	int rc, status = 0, err = 0;
	while (!err && (rc = prof_next(r, &rec)) == 1)
		err = smp_feed(s, r, &rec);
	int end_err = smp_finish(s, r);
	if (!err)
		err = end_err;
	if (err) {
		cli_error(path, "%s", bk_strerror(err));
		status = 1;
	} else if (rc < 0) {
		cli_error(path, "%s after %llu records", bk_strerror(rc),
			  (unsigned long long)prof_stats(r)->records);
		status = 1;
	}
	smp_summary(s, stderr, "backstep report");
	smp_free(s);
	return status;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		SMP_LONG_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct smp_opts o = { .pr = &fr_perf_script, .kernel = true };
	const char *output = NULL;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "f:o:p:t:c:nh", longopts, NULL)) != -1) {
		/* -p and -t: report's short names of --pid and --tid */
		int taken = smp_option(ch == 'p' ? SMP_OPT_PID : ch == 't' ? SMP_OPT_TID : ch, optarg,
				       &o, &output);
		if (taken < 0)
			return 2;
		if (taken)
			continue;
		if (ch == 'h') {
			printf("usage: %s\n", usage);
			return 0;
		}
		fprintf(stderr, "usage: %s\n", usage);
		return 2;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: %s\n", usage);
		return 2;
	}
	const char *path = argv[optind];
	struct prof_reader *r;
	int err = !strcmp(path, "-") ? prof_open_fd(0, &r) : prof_open_file(path, &r);
	if (err == BK_E_IO) {
		cli_file_error(path, err); /* missing, a directory, a FIFO, unreadable */
		return CLI_USAGE;
	}
	if (err) {
		cli_error(path, "%s", err == BK_E_CORRUPT ? "not a perf.data file (or a damaged one)"
					: bk_strerror(err));
		return CLI_USAGE;
	}
	if (output) {
		int fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0) {
			cli_error(output, "cannot write it");
			prof_close(r);
			return CLI_USAGE;
		}
		close(fd);
	}
	int status = report(r, path, &o);
	prof_close(r);
	return status;
}
