/* A hostile local user's process, for hostile_files.sh.
 *
 *   victim_lib fifo SRC DIR   copies the shared library SRC (zlib) to
 *                             DIR/libvictim.so, dlopen()s it, deletes it
 *                             and puts FIFOs at its path and at the name
 *                             /proc/PID/maps shows for it ("PATH (deleted)")
 *   victim_lib swap SRC DIR   copies SRC to DIR/libswap.so, dlopen()s it,
 *                             then renames a second copy over the path: the
 *                             file at the path is no longer the mapped one
 *   victim_lib truncate FILE  cuts FILE to pieces and restores it, forever
 *
 * fifo and swap then spend their time in the library's crc32() until
 * killed, after creating DIR/ready.NAME.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef unsigned long (*crc32_fn)(unsigned long, const unsigned char *, unsigned);

static void die(const char *what)
{
	fprintf(stderr, "victim_lib: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	if (in < 0)
		die(from);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0)
		die(to);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			die(to);
	close(out);
	close(in);
}

static void ready(const char *dir, const char *name)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/ready.%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		die(path);
	close(fd);
}

static void spin(void *lib)
{
	static unsigned char buf[1 << 16];
	crc32_fn crc = (crc32_fn)(uintptr_t)dlsym(lib, "crc32");
	unsigned long c = 0;

	if (!crc) {
		fprintf(stderr, "victim_lib: no crc32: %s\n", dlerror());
		exit(1);
	}
	for (;;) {
		c = crc(c, buf, sizeof(buf));
		buf[c % sizeof(buf)]++;
	}
}

static void truncate_loop(const char *file)
{
	struct stat st;
	char *data;
	int fd = open(file, O_RDWR | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0)
		die(file);
	data = malloc((size_t)st.st_size);
	if (!data || pread(fd, data, (size_t)st.st_size, 0) != st.st_size)
		die(file);
	for (unsigned i = 0;; i++) {
		if (ftruncate(fd, st.st_size / (2 + i % 7)) < 0 || ftruncate(fd, 0) < 0 ||
		    pwrite(fd, data, (size_t)st.st_size, 0) != st.st_size)
			die(file);
	}
}

int main(int argc, char **argv)
{
	char lib[4096], other[4200];
	void *h;

	if (argc == 3 && strcmp(argv[1], "truncate") == 0)
		truncate_loop(argv[2]);
	if (argc != 4) {
		fprintf(stderr, "usage: victim_lib fifo|swap SRC DIR | truncate FILE\n");
		return 2;
	}
	if (strcmp(argv[1], "fifo") == 0) {
		snprintf(lib, sizeof(lib), "%s/libvictim.so", argv[3]);
		copy_file(argv[2], lib);
		h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "victim_lib: %s\n", dlerror());
			return 1;
		}
		snprintf(other, sizeof(other), "%s (deleted)", lib);
		if (unlink(lib) < 0 || mkfifo(lib, 0644) < 0 || mkfifo(other, 0644) < 0)
			die("swap in FIFOs");
	} else {
		snprintf(lib, sizeof(lib), "%s/libswap.so", argv[3]);
		snprintf(other, sizeof(other), "%s/libswap.so.new", argv[3]);
		copy_file(argv[2], lib);
		h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "victim_lib: %s\n", dlerror());
			return 1;
		}
		copy_file(argv[2], other);
		if (rename(other, lib) < 0)
			die("rename");
	}
	ready(argv[3], argv[1]);
	spin(h);
	return 0;
}
