/* A main() for the fuzz harnesses without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on every file named on the command line, and
 * on every file of every directory named there (in name order, skipping
 * dot files such as .gitkeep), as sqlite's test/fuzzcheck.c replays its
 * corpus. The normal test run uses it to replay fuzz/corpus/<name>/ and
 * fuzz/crashers/<name>/ in every build configuration; under ASan+UBSan a
 * regression shows up as a sanitizer report, elsewhere as the harness's own
 * abort().
 *
 * Each input is read into a buffer of exactly its size, so that an
 * out-of-bounds read of the input is visible to ASan as it is under
 * libFuzzer. A directory or file that cannot be read fails the run: a
 * misspelt path must not pass silently.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			uint8_t *p = realloc(buf, cap * 2);
			if (!p) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = p;
			cap *= 2;
		}
	}
	int bad = ferror(f);
	fclose(f);
	if (!buf || bad) {
		fprintf(stderr, "%s: cannot read\n", path);
		free(buf);
		return -1;
	}
	/* Exactly LEN bytes (at least one, so the pointer is never NULL). */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		return -1;
	}
	memcpy(exact, buf, len);
	free(buf);
	/* Name the input first, so that a crash report says which one. */
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int skip_name(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Returns the number of inputs run, or -1. */
static long run_path(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path) == 0 ? 1 : -1;

	struct dirent **names;
	int n = scandir(path, &names, skip_name, alphasort);
	if (n < 0) {
		perror(path);
		return -1;
	}
	long count = 0;
	bool failed = false;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(path) + strlen(names[i]->d_name) + 2;
		char *full = malloc(len);
		if (!full) {
			failed = true;
		} else {
			snprintf(full, len, "%s/%s", path, names[i]->d_name);
			if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
				if (run_file(full) == 0)
					count++;
				else
					failed = true;
			}
			free(full);
		}
		free(names[i]);
	}
	free(names);
	return failed ? -1 : count;
}

int main(int argc, char **argv)
{
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	int status = 0;
	for (int i = 1; i < argc; i++) {
		long n = run_path(argv[i]);
		if (n < 0) {
			status = 1;
			continue;
		}
		printf("%s: %ld input%s replayed\n", argv[i], n, n == 1 ? "" : "s");
	}
	return status;
}
