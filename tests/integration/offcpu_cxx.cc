/* A C++ program whose threads wait in std::condition_variable::wait_for
 * under functions of its own, built -O2 without frame pointers (and once
 * more with them), for offcpu_vs_perf.sh:
 *
 *   offcpu_cxx SECONDS [DELAY | -]
 *
 * After sleeping DELAY seconds (default 0), or with "-" once a line came
 * on standard input (so a profiler attached to its pid sees all of its
 * waits), two std::threads wait until SECONDS have passed:
 *
 *   reader: read_rows  -> fetch_row   -> wait_for   (twice a round)
 *                      -> fetch_index -> wait_for   (once a round)
 *   writer: write_log  -> flush_log   -> wait_for
 *
 * Every wait is a 5 ms timeout on a condition variable of the thread's own
 * that nobody notifies, so every wait is one switch out of at least the
 * recorder's min_wait (1 ms), through libstdc++'s wait_for and libc's
 * pthread_cond_clockwait to the futex, and shares by count are known by
 * construction: read_rows and write_log half each, fetch_row a third,
 * fetch_index a sixth, flush_log a half. At exit it prints
 * "pid=PID waits=N" (the threads' waits), then "under FUNCTION N" for each
 * function (named as demangled): how many of those waits were under it.
 *
 * The functions are real frames at -O2: noinline and noclone, each does
 * something with its callee's result (no tail calls), and no two have the
 * same body (no identical-code folding). */
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <time.h>
#include <unistd.h>

static volatile long sink;
static std::atomic<bool> stop{false};
static std::atomic<long> rows{0}, indexes{0}, logs{0};

struct Waiter {
	std::mutex m;
	std::condition_variable cv;
};

static constexpr std::chrono::milliseconds wait_time{5};

__attribute__((noinline, noclone)) static bool fetch_row(Waiter &w)
{
	std::unique_lock<std::mutex> lock(w.m);
	bool timed_out = w.cv.wait_for(lock, wait_time) == std::cv_status::timeout;

	sink += 1;
	return timed_out;
}

__attribute__((noinline, noclone)) static bool fetch_index(Waiter &w)
{
	std::unique_lock<std::mutex> lock(w.m);
	bool timed_out = w.cv.wait_for(lock, wait_time) == std::cv_status::timeout;

	sink += 2;
	return timed_out;
}

__attribute__((noinline, noclone)) static bool flush_log(Waiter &w)
{
	std::unique_lock<std::mutex> lock(w.m);
	bool timed_out = w.cv.wait_for(lock, wait_time) == std::cv_status::timeout;

	sink += 3;
	return timed_out;
}

__attribute__((noinline, noclone)) static void read_rows(Waiter &w)
{
	long n = fetch_row(w);

	n += fetch_row(w);
	n += fetch_index(w);
	rows += 2;
	indexes += 1;
	sink += n;
}

__attribute__((noinline, noclone)) static void write_log(Waiter &w)
{
	long n = flush_log(w);

	logs += 1;
	sink += n + 4;
}

int main(int argc, char **argv)
{
	bool go_line = argc > 2 && std::strcmp(argv[2], "-") == 0;
	double seconds = argc > 1 ? atof(argv[1]) : 5,
	       delay = argc > 2 && !go_line ? atof(argv[2]) : 0;
	Waiter rw, ww;
	char line[64];

	std::printf("pid=%d\n", (int)getpid());
	std::fflush(stdout);
	if (go_line && !std::fgets(line, sizeof(line), stdin))
		return 1;
	std::this_thread::sleep_for(std::chrono::duration<double>(delay));
	std::thread reader([&rw] {
		while (!stop)
			read_rows(rw);
	});
	std::thread writer([&ww] {
		while (!stop)
			write_log(ww);
	});
	pthread_setname_np(reader.native_handle(), "reader");
	pthread_setname_np(writer.native_handle(), "writer");
	std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
	stop = true;
	reader.join();
	writer.join();
	std::printf("pid=%d waits=%ld\n", (int)getpid(), rows + indexes + logs);
	std::printf("under read_rows(Waiter&) %ld\nunder fetch_row(Waiter&) %ld\n"
		    "under fetch_index(Waiter&) %ld\nunder write_log(Waiter&) %ld\n"
		    "under flush_log(Waiter&) %ld\n",
		    rows + indexes, rows.load(), indexes.load(), logs.load(), logs.load());
	return 0;
}
