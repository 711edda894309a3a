/* A program for `backstep validate`: it generates its code at run time
 * (jit_code.h: J1 -> J2 -> J3 -> back into C, no frame pointers), writes
 * it with its .eh_frame into an ELF file (DIR/bk-jitcode.so) and maps
 * that file executable, so the code is a module a tracer sees; it also
 * registers the mapped .eh_frame with bk_space_register_eh_frame and
 * checks bk_backtrace through the code from its callback. Run it as
 *   backstep validate --only bk-jitcode.so -- jitfile
 * and every instruction of the generated code is checked against the
 * validator's shadow stack. With --broken, J2's CFA offset is written 8
 * too small where J2 calls J3 (its frame is 32 bytes, the row says 24): the
 * validator must find it. Exit 0, or 1 with a line saying what failed. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>

#include "backstep.h"
#include "jit_code.h"

static uint8_t *code;
static int through, calls;
static volatile int sink;

__attribute__((noinline)) void jitfile_cb(void)
{
	void *pcs[64];
	int n = bk_backtrace(pcs, 64);
	for (int i = 0; i + 2 < n; i++)
		if ((uint8_t *)pcs[i] == code + RA_J3 && (uint8_t *)pcs[i + 1] == code + RA_J2 &&
		    (uint8_t *)pcs[i + 2] == code + RA_J1)
			through++;
	calls++;
	sink++;
}

int main(int argc, char **argv)
{
	bool broken = argc > 1 && !strcmp(argv[1], "--broken");
	char dir[] = "/tmp/bkjitXXXXXX", path[64];
	if (!mkdtemp(dir)) {
		perror("jitfile: mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/bk-jitcode.so", dir);
	static uint8_t text[CODE_LEN], im[IM_LEN];
	write_code(text);
	write_image(im, text);
	if (broken && !break_j2(im + IM_EH, false)) {
		fprintf(stderr, "jitfile: J2's FDE is not where expected\n");
		return 1;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, im, IM_LEN) != IM_LEN) {
		perror("jitfile: writing the image");
		return 1;
	}
	uint8_t *base = mmap(NULL, IM_LEN, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	if (base == MAP_FAILED) {
		perror("jitfile: mmap");
		return 1;
	}
	code = base + IM_TEXT;
	int err = bk_space_register_eh_frame(bk_space_local(), base + IM_EH, 0, 0);
	for (int i = 0; i < 3; i++) {
		((void (*)(void (*)(void)))(void *)(code + J1))(jitfile_cb);
		sink++;
	}
	bk_space_deregister_eh_frame(bk_space_local(), base + IM_EH);
	munmap(base, IM_LEN);
	unlink(path);
	rmdir(dir);
	if (!broken && (err || through != calls)) {
		fprintf(stderr, "jitfile: registration %d (%s); bk_backtrace through the code %d of %d\n",
			err, bk_strerror(err), through, calls);
		return 1;
	}
	return 0;
}
