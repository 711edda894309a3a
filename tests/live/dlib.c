/* The shared library dlopen.c loads at run time (built as its own .so):
 *   dl_park_here: dl_x1 -> dl_x2 -> dl_x3 -> read on a pipe (blocks in the library)
 *   dl_park_via:  dl_y1 -> dl_y2 -> CALLBACK (a function of the executable,
 *                 which blocks: frames alternate exe -> lib -> exe) */
#include <unistd.h>

#include "live.h"

NOINLINE static void dl_x3(int fd)
{
	char ch;
	for (;;)
		if (read(fd, &ch, 1) <= 0)
			live_die("dlib: read returned");
}
NOINLINE static void dl_x2(int fd) { dl_x3(fd); KEEP(); }
NOINLINE static void dl_x1(int fd) { dl_x2(fd); KEEP(); }

void dl_park_here(int fd)
{
	dl_x1(fd);
	KEEP();
}

NOINLINE static void dl_y2(void (*cb)(void)) { cb(); KEEP(); }
NOINLINE static void dl_y1(void (*cb)(void)) { dl_y2(cb); KEEP(); }

void dl_park_via(void (*cb)(void))
{
	dl_y1(cb);
	KEEP();
}
