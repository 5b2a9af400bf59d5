// C++ new and delete, which libstdc++ sends through malloc and free, for
// alloc_probe.c.
extern "C" void *probe_new(unsigned long n)
{
	return new char[n];
}

extern "C" void probe_delete(void *p)
{
	delete[] static_cast<char *>(p);
}
