/* Calls the hand-written functions of broken.S. */
long broken_offset(long), broken_cfa(long), good_remember(long);

int main(void)
{
	volatile long s = 0;
	s += broken_offset(1);
	s += broken_cfa(2);
	s += good_remember(3);
	s += good_remember(0);
	return 0;
}
