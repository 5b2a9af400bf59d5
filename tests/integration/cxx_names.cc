/* A program whose hot functions have mangled names, for demangled_names.sh: a C++
 * member function template in a namespace, and a function named as Rust's
 * legacy scheme names one (an assembler label, so no Rust compiler is
 * needed), each burning about half of its CPU time:
 *
 *   cxx_names [SECONDS]   (default 3)
 *
 * Built with frame pointers, so the kernel's callchain has the callers,
 * and with the two functions kept out of line. */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

static volatile uint64_t sink;

extern "C" void rust_like_run(std::vector<uint32_t> *v) __asm__(
	"_ZN57_$LT$mycrate..hash..Fnv$u20$as$u20$core..hash..Hasher$GT$5write17h0123456789abcdefE");

namespace shop {
struct Cart {
	template <typename T> __attribute__((noinline)) uint64_t total(const std::vector<T> &v);
};

template <typename T> uint64_t Cart::total(const std::vector<T> &v)
{
	uint64_t s = 0;

	for (int r = 0; r < 2000; r++)
		for (size_t i = 0; i < v.size(); i++)
			s = s * 31 + v[i];
	return s;
}
} // namespace shop

extern "C" __attribute__((noinline)) void rust_like_run(std::vector<uint32_t> *v)
{
	uint64_t s = 0;

	for (int r = 0; r < 2000; r++)
		for (size_t i = 0; i < v->size(); i++)
			s = (s ^ (*v)[i]) * 0x100000001b3ULL;
	sink = s;
}

static double now()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3, end = now() + secs;
	std::vector<uint32_t> v(1000, 7);
	shop::Cart cart;

	while (now() < end) {
		sink = cart.total(v);
		rust_like_run(&v);
	}
	printf("done\n");
	return 0;
}
