/* Fuzz harness: the perf.data reader (src/profile).
 *
 * Input: a perf.data, either layout (file or pipe mode), as it would be on
 * disk. It is read three ways and every record decoded is walked:
 *   1. prof_open_memory: the image in place;
 *   2. prof_open_fd_opts on a memfd holding it, with pread (a file);
 *   3. the same memfd read as a stream with read() of at most 1..64 bytes
 *      at a time (the count from the input's last byte), as a pipe.
 * Then once more from memory with one of the first allocations failing.
 *
 * Every byte a decoded record points at is read (strings to their NUL,
 * callchain, registers, user stack, raw, branch entries, aux, read values,
 * build-ids, the events' names and ids), so a pointer past the input or
 * past the reader's arrays is an ASan report.
 *
 * abort() marks a broken invariant:
 *  - a record outside the input, smaller than 8 bytes, or not after the
 *    previous one; more records than the input has 8-byte words;
 *  - a record's pointers outside the record (memory mode: outside the
 *    input); a sample's counts inconsistent (registers other than the
 *    mask's weight, dyn_size above size, a callchain longer than the record);
 *  - an event index out of range;
 *  - an error not final (the next call returns something else);
 *  - the three ways disagreeing: on the error, the number of records or
 *    any decoded field (a digest of them), except that a file-mode input
 *    read as a stream must be refused with BK_E_UNSUPPORTED.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "profile/prof.h"

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_perfdata: %s\n", what);
		abort();
	}
}

struct digest {
	uint64_t h, n;
	int open_err, end;
	bool pipe;
};

static void mix(struct digest *g, uint64_t v)
{
	g->h = (g->h ^ v) * 0x100000001b3ull;
}

static void mix_bytes(struct digest *g, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mix(g, p[i]);
}

static void mix_str(struct digest *g, const char *s, const uint8_t *lo, const uint8_t *hi)
{
	check(s != NULL, "string missing");
	if (lo)
		check((const uint8_t *)s >= lo && (const uint8_t *)s < hi, "string outside its record");
	size_t n = strlen(s); /* to its NUL: ASan sees a read past the record */
	if (lo)
		check((const uint8_t *)s + n < hi, "string runs past its record");
	mix_bytes(g, (const uint8_t *)s, n);
}

static void in_record(const void *p, size_t len, const struct prof_record *r, const char *what)
{
	const uint8_t *q = p;
	check(q >= r->raw && q <= r->raw + r->size && len <= (size_t)(r->raw + r->size - q), what);
}

static void walk_regs(struct digest *g, const struct prof_regs *rg)
{
	mix(g, rg->abi);
	mix(g, rg->mask);
	check(rg->abi <= PROF_REGS_ABI_64, "regs abi");
	check(rg->nr == (rg->abi ? (unsigned)__builtin_popcountll(rg->mask) : 0u), "regs count");
	for (unsigned i = 0; i < rg->nr; i++)
		mix(g, rg->val[i]);
	if (rg->dwarf)
		for (unsigned d = 0; d < BK_MAX_REGS; d++) {
			uint64_t v;
			if (bk_regs_get(rg->dwarf, d, &v))
				mix(g, d * 31 + v);
		}
}

static void walk_record(struct digest *g, const struct prof_record *r, struct prof_reader *rd,
			const uint8_t *data, size_t size, bool memory, uint64_t *last_end)
{
	check(r->size >= 8, "record below 8 bytes");
	check(r->offset >= *last_end, "records out of order");
	check(r->offset + r->size <= size, "record past the input");
	*last_end = r->offset + r->size;
	if (memory)
		check(r->raw == data + r->offset, "record bytes not where its offset says");
	check(r->attr >= -1 && r->attr < (int)prof_attr_count(rd), "attr index");
	mix(g, r->kind);
	mix(g, r->type);
	mix(g, r->misc);
	mix(g, r->offset);
	mix(g, (uint64_t)r->attr);
	mix(g, r->have);
	mix(g, (uint32_t)r->pid);
	mix(g, (uint32_t)r->tid);
	mix(g, r->time);
	mix(g, r->id);
	mix(g, r->stream_id);
	mix(g, r->cpu);
	mix_bytes(g, r->raw, r->size);
	const uint8_t *lo = r->raw, *hi = r->raw + r->size;
	switch (r->kind) {
	case PROF_SAMPLE: {
		const struct prof_sample *s = &r->sample;
		mix(g, s->ip);
		mix(g, s->addr);
		mix(g, s->period);
		mix(g, s->weight);
		mix(g, s->data_src);
		mix(g, s->transaction);
		mix(g, s->phys_addr);
		mix(g, s->cgroup);
		mix(g, s->data_page_size);
		mix(g, s->code_page_size);
		check(s->callchain_nr <= r->size / 8, "callchain longer than the record");
		for (uint64_t i = 0; i < s->callchain_nr; i++)
			mix(g, s->callchain[i]);
		if (s->read.nr) {
			check(s->read.stride >= 8 && s->read.stride <= 24, "read stride");
			for (uint64_t i = 0; i < s->read.nr; i++) {
				uint64_t v, id, lost;
				prof_read_entry(&s->read, i, &v, &id, &lost);
				mix(g, v ^ id * 3 ^ lost * 5);
			}
			mix(g, s->read.time_enabled ^ s->read.time_running);
		}
		if (s->raw) {
			in_record(s->raw, s->raw_size, r, "raw outside the record");
			mix_bytes(g, s->raw, s->raw_size);
		}
		if (s->branch_entries) {
			check(s->branch_nr <= r->size / 24, "branch nr");
			in_record(s->branch_entries, 24 * s->branch_nr, r, "branches outside the record");
			mix_bytes(g, s->branch_entries, 24 * s->branch_nr);
		}
		mix(g, s->branch_hw_idx);
		walk_regs(g, &s->regs_user);
		walk_regs(g, &s->regs_intr);
		check(s->stack_dyn_size <= s->stack_size, "dyn_size above size");
		if (s->stack) {
			in_record(s->stack, s->stack_size, r, "stack outside the record");
			mix_bytes(g, s->stack, s->stack_size);
		} else {
			check(s->stack_size == 0, "stack size without bytes");
		}
		mix(g, s->stack_dyn_size);
		if (s->aux) {
			in_record(s->aux, s->aux_size, r, "aux outside the record");
			mix_bytes(g, s->aux, s->aux_size);
		}
		break;
	}
	case PROF_MMAP:
		mix(g, r->mmap.addr ^ r->mmap.len * 3 ^ r->mmap.pgoff * 5);
		mix(g, r->mmap.maj ^ r->mmap.min ^ r->mmap.ino ^ r->mmap.ino_generation);
		mix(g, r->mmap.prot ^ r->mmap.flags);
		check(r->mmap.build_id_len <= 20, "mmap2 build-id length");
		if (r->mmap.build_id_len) {
			in_record(r->mmap.build_id, r->mmap.build_id_len, r, "build-id outside");
			mix_bytes(g, r->mmap.build_id, r->mmap.build_id_len);
		}
		mix_str(g, r->mmap.filename, lo, hi);
		break;
	case PROF_COMM:
		mix(g, r->comm.exec);
		mix_str(g, r->comm.comm, lo, hi);
		break;
	case PROF_FORK:
	case PROF_EXIT:
		mix(g, (uint32_t)r->task.ppid ^ (uint64_t)(uint32_t)r->task.ptid << 32);
		mix(g, r->task.time);
		break;
	case PROF_LOST:
		mix(g, r->lost.id ^ r->lost.lost);
		break;
	case PROF_BUILD_ID:
		check(r->build_id.len <= 20, "build-id length");
		mix_bytes(g, r->build_id.bytes, r->build_id.len);
		mix_str(g, r->build_id.filename, lo, hi);
		break;
	case PROF_FINISHED_ROUND:
	case PROF_OTHER:
		break;
	default:
		check(0, "unknown kind");
	}
}

static void walk_facts(struct digest *g, struct prof_reader *r)
{
	mix(g, prof_arch(r));
	if (prof_arch_name(r))
		mix_str(g, prof_arch_name(r), NULL, NULL);
	for (size_t i = 0; i < prof_attr_count(r); i++) {
		const struct prof_attr *a = prof_attr_at(r, i);
		mix(g, a->sample_type ^ a->read_format ^ a->sample_regs_user ^ a->config);
		check(a->size >= 64, "attr size");
		if (a->name)
			mix_str(g, a->name, NULL, NULL);
		for (size_t k = 0; k < a->nids; k++)
			mix(g, a->ids[k]);
	}
	for (size_t i = 0; i < prof_build_id_count(r); i++) {
		const struct prof_build_id *b = prof_build_id_at(r, i);
		check(b->len <= 20, "build-id list length");
		mix_bytes(g, b->bytes, b->len);
		mix_str(g, b->filename, NULL, NULL);
	}
}

static struct digest run(struct prof_reader *r, int open_err, const uint8_t *data, size_t size,
			 bool memory)
{
	struct digest g = { 0xcbf29ce484222325ull, 0, open_err, 0, false };
	if (open_err)
		return g;
	g.pipe = prof_is_pipe(r);
	walk_facts(&g, r);
	struct prof_record rec;
	uint64_t last_end = 0;
	int res;
	while ((res = prof_next(r, &rec)) > 0) {
		g.n++;
		check(g.n <= size / 8, "more records than the input has words");
		walk_record(&g, &rec, r, data, size, memory, &last_end);
	}
	g.end = res;
	check(prof_next(r, &rec) == res, "an error or the end is not final");
	walk_facts(&g, r); /* pipe mode: facts may have grown */
	prof_close(r);
	return g;
}

static int memfd = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prof_reader *r = NULL;
	int err = prof_open_memory(data, size, &r);
	struct digest mem = run(r, err, data, size, true);

	if (memfd < 0)
		memfd = memfd_create("fuzz_perfdata", 0);
	if (memfd < 0 || ftruncate(memfd, 0) != 0)
		return 0;
	size_t done = 0;
	while (done < size) {
		ssize_t n = pwrite(memfd, data + done, size - done, (off_t)done);
		if (n <= 0)
			return 0;
		done += (size_t)n;
	}

	/* As a file: pread. */
	err = prof_open_fd_opts(memfd, true, 0, &r);
	struct digest file = run(r, err, data, size, false);
	check(file.open_err == mem.open_err && file.end == mem.end && file.n == mem.n &&
		      file.h == mem.h,
	      "pread reading differs from memory");

	/* As a pipe: read() of a few bytes at a time. */
	if (lseek(memfd, 0, SEEK_SET) != 0)
		return 0;
	size_t max_read = size ? 1 + data[size - 1] % 64 : 1;
	err = prof_open_fd_opts(memfd, false, max_read, &r);
	struct digest stream = run(r, err, data, size, false);
	if (mem.open_err == 0 && !mem.pipe) {
		check(stream.open_err == BK_E_UNSUPPORTED, "file mode on a stream not refused");
	} else if (!(mem.open_err == 0 && mem.pipe) && stream.open_err == BK_E_UNSUPPORTED &&
		   size >= 16 && !memcmp(data, "PERFILE2", 8) && base_rd_le(data + 8, 8) != 16) {
		/* a damaged file-mode header: memory says corrupt, a stream refuses first */
	} else {
		check(stream.open_err == mem.open_err && stream.end == mem.end && stream.n == mem.n &&
			      stream.h == mem.h,
		      "stream reading differs from memory");
	}

	/* An allocation failing while opening and reading. */
	base_alloc_fail_after(1 + size % 7);
	err = prof_open_memory(data, size, &r);
	if (!err) {
		struct prof_record rec;
		while (prof_next(r, &rec) > 0)
			;
		prof_close(r);
	}
	base_alloc_fail_after(0);
	check(err == 0 || err == BK_E_NOMEM || err == mem.open_err, "allocation failure: wrong error");
	return 0;
}
