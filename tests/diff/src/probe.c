/* Configure-time probe: can this compiler build and link for its target? */
int main(void)
{
	return 0;
}
