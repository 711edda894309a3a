/* setjmp/longjmp out of a deep recursion: the frames longjmp skips are
 * dropped from the shadow stack (SP passed their CFA). */
#include <setjmp.h>

static jmp_buf env;

__attribute__((noinline)) static void deep(int n)
{
	if (n == 0)
		longjmp(env, 1);
	deep(n - 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

int main(void)
{
	volatile int count = 0;
	for (int i = 0; i < 3; i++) {
		if (setjmp(env) == 0)
			deep(4 + i);
		else
			count++;
	}
	return count == 3 ? 0 : 1;
}
