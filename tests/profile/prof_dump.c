/* prof_dump: prints what src/profile's reader finds in a perf.data, one
 * line per fact, as key=value tokens, for tests/profile/perf_test.py to
 * hold against `perf script` and `perf report -D`.
 *
 *   prof_dump FILE        file mode (or a pipe-mode recording saved to FILE)
 *   prof_dump -           a pipe-mode stream on stdin (prof_open_fd)
 *
 * Lines: `arch`, `attr` per event, `buildid` per HEADER_BUILD_ID entry,
 * then per record `sample`, `mmap`, `comm`, `fork`, `exit`, `lost`,
 * `round`, `buildid_rec`, `other`, and `end` with the counts. A sample's
 * `regs=` lists the user registers in mask order, `dwarf=` the mapped ones
 * as regno:value. Exit status 1 with one line on stderr on an error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "profile/prof.h"

static void hex(const uint8_t *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		printf("%02x", p[i]);
}

static void common(const struct prof_record *rec)
{
	printf(" off=%" PRIu64 " attr=%d", rec->offset, rec->attr);
	if (rec->have & PROF_SAMPLE_TID)
		printf(" pid=%" PRId32 " tid=%" PRId32, rec->pid, rec->tid);
	if (rec->have & PROF_SAMPLE_TIME)
		printf(" time=%" PRIu64, rec->time);
	if (rec->have & PROF_SAMPLE_CPU)
		printf(" cpu=%" PRIu32, rec->cpu);
	if (rec->have & PROF_SAMPLE_ID)
		printf(" id=%" PRIu64, rec->id);
}

static void sample(const struct prof_record *rec)
{
	const struct prof_sample *s = &rec->sample;
	printf("sample");
	common(rec);
	printf(" ip=0x%" PRIx64 " period=%" PRIu64 " addr=0x%" PRIx64 " misc=%u", s->ip, s->period,
	       s->addr, rec->misc);
	printf(" callchain=%" PRIu64 ":", s->callchain_nr);
	for (uint64_t i = 0; i < s->callchain_nr; i++)
		printf("%s%" PRIx64, i ? "," : "", s->callchain[i]);
	printf(" abi=%" PRIu64 " regs=", s->regs_user.abi);
	for (unsigned i = 0; i < s->regs_user.nr; i++)
		printf("%s%" PRIx64, i ? "," : "", s->regs_user.val[i]);
	if (s->regs_user.dwarf) {
		printf(" dwarf=");
		bool first = true;
		for (unsigned d = 0; d < BK_MAX_REGS; d++) {
			uint64_t v = 0;
			if (bk_regs_get(s->regs_user.dwarf, d, &v)) {
				printf("%s%u:%" PRIx64, first ? "" : ",", d, v);
				first = false;
			}
		}
	}
	printf(" stack_size=%" PRIu64 " stack_dyn=%" PRIu64, s->stack_size, s->stack_dyn_size);
	if (s->stack)
		printf(" stack_off=%td", s->stack - rec->raw);
	printf(" data_src=0x%" PRIx64 "\n", s->data_src);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: prof_dump FILE|-\n");
		return 2;
	}
	struct prof_reader *r;
	int err = !strcmp(argv[1], "-") ? prof_open_fd(0, &r) : prof_open_file(argv[1], &r);
	if (err) {
		fprintf(stderr, "prof_dump: %s: %s\n", argv[1], bk_strerror(err));
		return 1;
	}
	static const char *const archs[] = { "unknown", "x86_64", "aarch64" };
	enum bk_arch arch = prof_arch(r);
	printf("arch %s name=%s pipe=%d\n", arch < 3 ? archs[arch] : "?",
	       prof_arch_name(r) ? prof_arch_name(r) : "-", prof_is_pipe(r));
	for (size_t i = 0; i < prof_attr_count(r); i++) {
		const struct prof_attr *a = prof_attr_at(r, i);
		printf("attr %zu type=%" PRIu32 " config=%" PRIu64 " sample_type=0x%" PRIx64
		       " read_format=0x%" PRIx64 " regs_user=0x%" PRIx64 " stack_user=%" PRIu32
		       " sample_id_all=%d name=%s ids=",
		       i, a->type, a->config, a->sample_type, a->read_format, a->sample_regs_user,
		       a->sample_stack_user, a->sample_id_all, a->name ? a->name : "-");
		for (size_t k = 0; k < a->nids; k++)
			printf("%s%" PRIu64, k ? "," : "", a->ids[k]);
		printf("\n");
	}
	for (size_t i = 0; i < prof_build_id_count(r); i++) {
		const struct prof_build_id *b = prof_build_id_at(r, i);
		printf("buildid pid=%" PRId32 " id=", b->pid);
		hex(b->bytes, b->len);
		printf(" file=%s\n", b->filename);
	}
	struct prof_record rec;
	uint64_t n = 0;
	while ((err = prof_next(r, &rec)) > 0) {
		n++;
		switch (rec.kind) {
		case PROF_SAMPLE:
			sample(&rec);
			break;
		case PROF_MMAP:
			printf("mmap");
			common(&rec);
			printf(" type=%" PRIu32 " addr=0x%" PRIx64 " len=0x%" PRIx64 " pgoff=0x%" PRIx64,
			       rec.type, rec.mmap.addr, rec.mmap.len, rec.mmap.pgoff);
			if (rec.mmap.mmap2) {
				printf(" maj=%" PRIu32 " min=%" PRIu32 " ino=%" PRIu64 " gen=%" PRIu64
				       " prot=%" PRIu32 " flags=%" PRIu32,
				       rec.mmap.maj, rec.mmap.min, rec.mmap.ino, rec.mmap.ino_generation,
				       rec.mmap.prot, rec.mmap.flags);
				if (rec.mmap.build_id_len) {
					printf(" buildid=");
					hex(rec.mmap.build_id, rec.mmap.build_id_len);
				}
			}
			printf(" file=%s\n", rec.mmap.filename);
			break;
		case PROF_COMM:
			printf("comm");
			common(&rec);
			printf(" exec=%d comm=%s\n", rec.comm.exec, rec.comm.comm);
			break;
		case PROF_FORK:
		case PROF_EXIT:
			printf("%s", rec.kind == PROF_FORK ? "fork" : "exit");
			common(&rec);
			printf(" ppid=%" PRId32 " ptid=%" PRId32 "\n", rec.task.ppid, rec.task.ptid);
			break;
		case PROF_LOST:
			printf("lost");
			common(&rec);
			printf(" lost=%" PRIu64 "\n", rec.lost.lost);
			break;
		case PROF_FINISHED_ROUND:
			printf("round off=%" PRIu64 "\n", rec.offset);
			break;
		case PROF_BUILD_ID:
			printf("buildid_rec pid=%" PRId32 " id=", rec.build_id.pid);
			hex(rec.build_id.bytes, rec.build_id.len);
			printf(" file=%s\n", rec.build_id.filename);
			break;
		case PROF_OTHER:
			printf("other");
			common(&rec);
			printf(" type=%" PRIu32 " size=%u\n", rec.type, rec.size);
			break;
		}
	}
	const struct prof_stats *st = prof_stats(r);
	printf("end records=%" PRIu64 " returned=%" PRIu64 " other=%" PRIu64 " samples=%" PRIu64
	       " payload=%" PRIu64 " status=%d",
	       st->records, n, st->other, st->by_type[PROF_RECORD_SAMPLE], st->payload_bytes, err);
	printf(" types=");
	bool first = true;
	for (unsigned t = 0; t < BK_ARRAY_LEN(st->by_type); t++)
		if (st->by_type[t]) {
			printf("%s%u:%" PRIu64, first ? "" : ",", t, st->by_type[t]);
			first = false;
		}
	printf("\n");
	prof_close(r);
	if (err < 0) {
		fprintf(stderr, "prof_dump: %s: %s\n", argv[1], bk_strerror(err));
		return 1;
	}
	return 0;
}
