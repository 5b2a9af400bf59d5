/* The shared library plt_hot calls through its PLT: a function so small
 * that the stub in front of it takes a good share of the time. */
int fr_plt_tiny(int x);

int fr_plt_tiny(int x)
{
	return x * 3 + 1;
}
