/* backstep report [options] FILE: the samples of a perf.data file (what
 * `perf record --call-graph dwarf` writes; FILE "-": a stream from `perf
 * record -o -`) as named stacks, through the output module (frames.h):
 * perf-script (default), folded, json (JSON Lines). Each sample's user
 * stack is walked from its registers and stack copy in its process's
 * space (src/profile/prof_stack.c); kernel frames from the sample's
 * callchain go above them (--no-kernel drops them). The file is streamed:
 * memory grows with processes, modules and distinct stacks, not samples.
 * A summary goes to stderr. */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "frames.h"
#include "out.h"

#include "../src/profile/prof_stack.h"

#define MAX_FRAMES 1024
#define MAX_INLINE 16
#define PERF_CONTEXT_KERNEL ((uint64_t)-128)
#define PERF_CONTEXT_USER ((uint64_t)-512)
#define PERF_CONTEXT_MAX ((uint64_t)-4095)

static const char usage[] =
	"backstep report [--format perf-script|folded|json|speedscope] [-o FILE] [--pid PID] [--tid TID]\n"
	"                [--comm NAME] [--no-inline] [-n] [--kernel|--no-kernel] FILE|-";

struct report_opts {
	const struct fr_printer *pr;
	int pid, tid;               /* 0: all */
	const char *comm;
	bool no_symbols, kernel;
};

/* Kernel symbols from /proc/kallsyms (this machine's kernel: a recording
 * made here), read on the first kernel frame; none when unreadable. */
struct ksym {
	uint64_t addr;
	char *name;
};
static struct ksym *ksyms;
static size_t nksyms;
static bool ksyms_read;

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void read_kallsyms(void)
{
	ksyms_read = true;
	FILE *f = fopen("/proc/kallsyms", "r");
	if (!f)
		return;
	size_t cap = 0;
	char line[512], name[256], type;
	unsigned long long addr;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || addr == 0 ||
		    (type != 't' && type != 'T'))
			continue;
		if (nksyms == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			struct ksym *n = realloc(ksyms, ncap * sizeof(*n));
			if (!n)
				break;
			ksyms = n;
			cap = ncap;
		}
		if (!(ksyms[nksyms].name = strdup(name)))
			break;
		ksyms[nksyms++].addr = addr;
	}
	fclose(f);
	qsort(ksyms, nksyms, sizeof(*ksyms), ksym_cmp);
}

/* The kernel function holding ADDR, as a symbol. */
static bool kernel_symbol(uint64_t addr, struct bk_symbol *out)
{
	if (!ksyms_read)
		read_kallsyms();
	size_t lo = BASE_COUNT_LE(ksyms, nksyms, addr, addr);
	if (lo == 0)
		return false;
	*out = (struct bk_symbol){ .function = ksyms[lo - 1].name, .offset = addr - ksyms[lo - 1].addr };
	return true;
}

/* The kernel frames of a callchain (the entries after PERF_CONTEXT_KERNEL
 * up to the next context marker), into F, their names into KSYMS. */
static size_t kernel_frames(const struct prof_sample *s, struct fr_frame *f, struct bk_symbol *ks,
			    size_t max, bool symbols)
{
	size_t n = 0;
	bool in_kernel = false;
	for (uint64_t i = 0; i < s->callchain_nr && n < max; i++) {
		uint64_t ip = s->callchain[i];
		if (ip >= PERF_CONTEXT_MAX) {
			in_kernel = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		if (!in_kernel)
			continue;
		f[n] = (struct fr_frame){ .pc = ip, .how = BK_HOW_INITIAL,
					  .module = "[kernel.kallsyms]", .module_off = ip };
		if (symbols && kernel_symbol(ip, &ks[n])) {
			f[n].syms = &ks[n];
			f[n].nsym = 1;
		}
		n++;
	}
	return n;
}

/* What one report carries from sample to sample. */
struct report_state {
	struct prof_reader *r;
	struct prof_stacks *ps;
	const struct report_opts *o;
	uint64_t shown, skipped;
};

/* One record released in time order: a change to the processes, or a
 * sample to walk, name and print. 0, or a BK_E_* code. */
static int report_record(struct report_state *rs, const struct prof_record *rec)
{
	static uint64_t pcs[MAX_FRAMES];
	static uint8_t interrupted[MAX_FRAMES];
	static struct fr_frame frames[2 * MAX_FRAMES];
	static struct bk_symbol syms[MAX_FRAMES * MAX_INLINE], ksyms_of[MAX_FRAMES];
	const struct report_opts *o = rs->o;
	if (rec->kind != PROF_SAMPLE)
		return prof_stacks_event(rs->ps, rec);
	if ((o->pid && rec->pid != o->pid) || (o->tid && rec->tid != o->tid)) {
		rs->skipped++;
		return 0;
	}
	struct prof_walk w;
	int n = prof_stacks_walk(rs->ps, rec, pcs, interrupted, MAX_FRAMES, &w);
	if (n < 0)
		return n;
	if (o->comm && strcmp(o->comm, w.comm)) {
		rs->skipped++;
		return 0;
	}
	size_t nf = o->kernel ? kernel_frames(&rec->sample, frames, ksyms_of, MAX_FRAMES,
					       !o->no_symbols)
			      : 0;
	for (int k = 0; k < n; k++) {
		struct fr_frame *f = &frames[nf++];
		/* An interrupted frame is named at its PC; a return address at
		 * PC - 1, the call. */
		uint64_t lookup = interrupted[k] ? pcs[k] : pcs[k] - 1;
		struct bk_module_info mi;
		*f = (struct fr_frame){ .pc = pcs[k], .how = k ? BK_HOW_CFI : BK_HOW_INITIAL };
		if (w.space && bk_space_module_at(w.space, lookup, &mi) == 0) {
			f->module = mi.path;
			f->module_off = pcs[k] - mi.start;
		}
		f->syms = &syms[(size_t)k * MAX_INLINE];
		f->nsym = o->no_symbols || !w.space
				  ? 0
				  : bk_space_symbolize(w.space, lookup, &syms[(size_t)k * MAX_INLINE],
						       MAX_INLINE);
		if (f->nsym < 0)
			f->nsym = 0;
	}
	const struct prof_attr *attr = rec->attr >= 0 ? prof_attr_at(rs->r, (size_t)rec->attr) : NULL;
	struct fr_stack st = {
		.pid = rec->pid, .tid = rec->tid, .name = w.comm, .time = rec->time,
		.cpu = rec->cpu, .period = rec->sample.period,
		.event = attr && attr->name ? attr->name : "cpu-clock",
		.f = frames, .n = nf, .began = true, .error = w.ended,
	};
	o->pr->stack(&st, rs->shown++);
	return 0;
}

/* Release the queue's final records (all at the END) to report_record. */
static int report_round(struct report_state *rs, struct prof_queue *q, bool end)
{
	size_t k = prof_queue_round(q, end);
	int err = 0;
	for (size_t i = 0; i < k && !err; i++) {
		struct prof_record rec;
		err = prof_queue_get(q, rs->r, i, &rec);
		if (err == 1)
			err = 0; /* decoded */
		if (!err)
			err = report_record(rs, &rec);
	}
	prof_queue_drop_ready(q);
	return err;
}

static int report(struct prof_reader *r, const char *path, const struct report_opts *o)
{
	struct prof_stacks *ps;
	struct prof_queue *q;
	enum bk_arch arch = prof_arch(r);
	if (arch == BK_ARCH_UNKNOWN)
		arch = BK_ARCH_X86_64;
	if (prof_stacks_new(arch, &ps) != 0 || prof_queue_new(&q) != 0) {
		cli_error(path, "out of memory");
		return 1;
	}
	struct report_state rs = { r, ps, o, 0, 0 };
	struct prof_record rec;
	uint64_t lost = 0;
	int rc, status = 0, err = 0;
	o->pr->begin();
	while (!err && (rc = prof_next(r, &rec)) == 1) {
		switch (rec.kind) {
		case PROF_LOST:
			lost += rec.lost.lost;
			break;
		case PROF_FINISHED_ROUND:
			err = report_round(&rs, q, false);
			break;
		case PROF_SAMPLE:
		case PROF_MMAP:
		case PROF_COMM:
		case PROF_FORK:
		case PROF_EXIT:
			err = prof_queue_push(q, &rec);
			break;
		default:
			break;
		}
	}
	if (!err)
		err = report_round(&rs, q, true);
	o->pr->end();
	out_flush();
	if (err) {
		cli_error(path, "%s", bk_strerror(err));
		status = 1;
	} else if (rc < 0) {
		cli_error(path, "%s after %llu records", bk_strerror(rc),
			  (unsigned long long)prof_stats(r)->records);
		status = 1;
	}
	const struct prof_stack_stats *st = prof_stacks_stats(ps);
	fprintf(stderr,
		"backstep report: %llu samples read, %llu walked to the end, %llu truncated, "
		"%llu without user registers, %llu without a stack copy; %llu filtered out; "
		"%llu lost (perf)\n",
		(unsigned long long)st->samples, (unsigned long long)st->complete,
		(unsigned long long)st->truncated, (unsigned long long)st->no_regs,
		(unsigned long long)st->no_stack, (unsigned long long)rs.skipped,
		(unsigned long long)lost);
	prof_queue_free(q);
	prof_stacks_free(ps);
	for (size_t i = 0; i < nksyms; i++)
		free(ksyms[i].name);
	free(ksyms);
	ksyms = NULL;
	nksyms = 0;
	ksyms_read = false;
	return status;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "comm", required_argument, NULL, 'c' },
		{ "no-inline", no_argument, NULL, 'I' },
		{ "no-symbols", no_argument, NULL, 'n' },
		{ "kernel", no_argument, NULL, 'k' },
		{ "no-kernel", no_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct report_opts o = { .pr = &fr_perf_script, .kernel = true };
	const char *output = NULL;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "f:o:p:t:c:nh", longopts, NULL)) != -1) {
		uint64_t v;
		switch (ch) {
		case 'f':
			if (!strcmp(optarg, "perf-script"))
				o.pr = &fr_perf_script;
			else if (!strcmp(optarg, "folded"))
				o.pr = &fr_folded;
			else if (!strcmp(optarg, "json"))
				o.pr = &fr_jsonl;
			else if (!strcmp(optarg, "speedscope"))
				o.pr = &fr_speedscope;
			else {
				cli_error("--format", "'%s' is not perf-script, folded, json or speedscope",
					  optarg);
				return 2;
			}
			break;
		case 'o': output = optarg; break;
		case 'p':
		case 't':
			if (!cli_parse_u64(optarg, &v) || v == 0 || v > 0x7fffffff) {
				cli_error(ch == 'p' ? "--pid" : "--tid", "'%s' is not a process id", optarg);
				return 2;
			}
			*(ch == 'p' ? &o.pid : &o.tid) = (int)v;
			break;
		case 'c': o.comm = optarg; break;
		case 'I': fr_set_inline(false); break;
		case 'n': o.no_symbols = true; break;
		case 'k': o.kernel = true; break;
		case 'K': o.kernel = false; break;
		case 'h':
			printf("usage: %s\n", usage);
			return 0;
		default:
			fprintf(stderr, "usage: %s\n", usage);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: %s\n", usage);
		return 2;
	}
	const char *path = argv[optind];
	struct prof_reader *r;
	int err = !strcmp(path, "-") ? prof_open_fd(0, &r) : prof_open_file(path, &r);
	if (err) {
		cli_error(path, "%s", err == BK_E_CORRUPT ? "not a perf.data file (or a damaged one)"
					: bk_strerror(err));
		return 1;
	}
	if (output) {
		int fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0) {
			cli_error(output, "cannot write it");
			prof_close(r);
			return 1;
		}
		close(fd);
	}
	int status = report(r, path, &o);
	prof_close(r);
	return status;
}
