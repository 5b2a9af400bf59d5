/* Symbolization of user addresses from ELF files and of kernel addresses
 * from kallsyms.
 *
 * Two caches sit behind a struct fr_symbols:
 *
 * - images: one parsed ELF file per on-disk identity (device, inode, size,
 *   mtime, ctime), shared by every cache of the process and kept between
 *   profiles (core/symbols/symbols_images.c): concurrent profiles that name
 *   libc parse it once, and the next attach finds it parsed, its DWARF
 *   lines already looked up. A cache holds a reference to each image it
 *   resolved to, dropped by fr_symbols_free(); an image nobody holds stays
 *   when it has a build id, within fr_symbols_keep_limit(), and is freed
 *   otherwise. An image holds the PT_LOAD headers, the GNU build id and a
 *   sorted, de-duplicated array of function symbols (.symtab merged with
 *   .dynsym). A file is parsed once however many processes map it and
 *   through whichever /proc/PID/root it is reached; a file that cannot be
 *   parsed is shared with its error while profiles hold it.
 * - requests: what a caller asked for, keyed by (root, path, expected build
 *   id), pointing at the image it resolved to or holding the error it got,
 *   and at the symbols of its separate debug file when the image has no
 *   .symtab or no DWARF: the one found by build id in a host debug
 *   directory is kept with the image; otherwise searched per cache, that
 *   is per profile (a debug file installed since is found by the next
 *   profile). A file that is gone or has another build id is
 *   taken from the recorder's symbol cache when there is a copy with the
 *   expected build id (fr_symbols_set_paths()). A repeated look-up
 *   therefore costs one hash and one binary search, with no system call,
 *   and a missing file is opened once.
 *
 * The kernel's table (core/symbols/kallsyms.h) is taken on first use.
 *
 * Every file is one a user may control (a library in their home, a path
 * inside their container): files are opened with fr_open_untrusted() (no
 * symlink followed, no driver's open, no wait on a FIFO, regular files of
 * at most FR_ELF_MAX_SIZE) and read by core/symbols/elf_image.c, never mapped.
 *
 * Opening, parsing and closing a file run on the cache's worker thread
 * (core/symbols/symbols_io.c), waited for at most FILE_DEADLINE_MS: a file
 * on a FUSE mount whose owner never answers (or a hung network mount)
 * would otherwise hold the caller, an attach, forever. A call that misses
 * its deadline is left to finish alone and frees what it made; the file
 * counts as unreadable for this cache. Once a cache has waited out
 * FILE_WAIT_BUDGET_MS in total, further files get FILE_LATE_DEADLINE_MS.
 *
 * Invariants: image->addrs is sorted with unique addresses, image->syms
 * parallel to it; kernel syms likewise. Names returned to callers point
 * into arenas (or the kallsyms buffer) freed only by fr_symbols_free().
 */
#include "core/symbols/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/symbols/debuglink.h"
#include "core/symbols/elf_image.h"
#include "core/util/fs.h"
#include "core/symbols/kallsyms.h"
#include "core/symbols/perfmap.h"
#include "core/util/log.h"
#include "core/symbols/search.h"
#include "core/util/htable.h"
#include "core/util/worker.h"
#include "core/symbols/symbols_int.h"

/* The debug file of `img` for `req`: the one a profile before found by
 * build id in a debug directory of the host, shared; else a search (the
 * host's directories, then this root's, then where .gnu_debuglink says),
 * whose find on the host is offered to every later profile, and whose
 * find elsewhere is this request's alone. Returns 0 or -ENOMEM. */
static int request_debug(struct fr_symbols *s, struct request *req, struct image *img,
			 const char *root, const char *path)
{
	struct fr_elf_image *dbg = NULL;
	int host_dir = -1;

	req->debug = images_debug(img, s->debug_dirs, s->ndebug_dirs);
	if (req->debug)
		return 0;
	if (symbols_timed_debug(s, img, path, root, &dbg, &host_dir) < 0)
		return -ENOMEM;
	if (!dbg)
		return 0;
	if (host_dir < 0 || !images_set_debug(img, dbg, s->debug_dirs[host_dir]))
		req->own_debug = dbg;
	req->debug = dbg;
	return 0;
}

/* Returns 0 with the usable image of `file` (a copy in the symbol cache
 * when `cached`, whose debug files are still those of `path`), -ESTALE
 * when its build id is not the expected one, or the error that makes it
 * unusable. */
static int image_try(struct fr_symbols *s, struct request *req, const char *root, const char *file,
		     const char *path, bool cached, const uint8_t *bid, size_t bid_len)
{
	struct image *img = NULL;
	int ret = images_get(s, root, file, cached, &img);

	if (ret < 0)
		return ret;
	if (img->err < 0)
		return img->err;
	/* A file without a build id cannot be checked; it is trusted, unless
	 * the caller asked for proof, or it is a cache entry (named by the
	 * build id it must carry). */
	if ((s->need_build_id || cached) && (!bid_len || !img->elf.build_id_len))
		return -ESTALE;
	if (bid_len && img->elf.build_id_len &&
	    (bid_len != img->elf.build_id_len || memcmp(bid, img->elf.build_id, bid_len) != 0))
		return -ESTALE;
	if (img->elf.debug_missing && request_debug(s, req, img, root, path) < 0)
		return -ENOMEM;
	req->image = img;
	return 0;
}

/* Resolves a request to an image: root + path first, then path. A build id
 * mismatch is reported in preference to a missing file because it says
 * more: the mapped file was replaced. */
static int request_resolve(struct fr_symbols *s, struct request *req, const char *root,
			   const char *path, const uint8_t *bid, size_t bid_len)
{
	char name[FR_SYMCACHE_NAME_MAX], *entry;
	int rooted = 0, ret, cached;

	if (path[0] != '/')
		return -ENOENT; /* [vdso], [heap], anonymous memory */
	if (req->root_len) {
		rooted = image_try(s, req, root, path, path, false, bid, bid_len);
		if (rooted == 0 || rooted == -ENOMEM)
			return rooted;
	}
	ret = image_try(s, req, NULL, path, path, false, bid, bid_len);
	if (ret == 0 || ret == -ENOMEM)
		return ret;
	if (rooted && ret != -ESTALE)
		ret = rooted;
	/* The mapped file is gone or was replaced: the copy the recorder
	 * kept of it, named by its build id (recorder/tracking/symcache.h). */
	if (!s->cache_dir || !bid_len || bid_len > FR_ELF_BUILD_ID_MAX)
		return ret;
	/* Root's copy first, then one of a file the process's user owned. */
	for (int owner = 0; owner < (s->owner ? 2 : 1); owner++) {
		if (fr_symcache_elf_name(name, sizeof(name), bid, bid_len, owner ? s->owner : 0) <
			    0 ||
		    asprintf(&entry, "%s/%s", s->cache_dir, name) < 0)
			return -ENOMEM;
		cached = image_try(s, req, NULL, entry, path, true, bid, bid_len);
		free(entry);
		if (cached == 0 || cached == -ENOMEM)
			return cached;
	}
	return ret;
}

static uint64_t request_hash(const char *root, size_t root_len, const char *path, size_t path_len,
			     const uint8_t *bid, size_t bid_len, uint32_t owner)
{
	uint64_t h = fr_fnv1a(FR_FNV_OFFSET, &owner, sizeof(owner));

	h = fr_fnv1a(h, root, root_len + 1);
	h = fr_fnv1a(h, path, path_len + 1);
	return fr_fnv1a(h, bid, bid_len);
}

/* A request is also the user's it was resolved for: the symbol cache's
 * copies of a user's files serve only that user (fr_symbols_set_owner()). */
static bool request_match(const struct request *r, const char *root, size_t root_len,
			  const char *path, size_t path_len, const uint8_t *bid, size_t bid_len,
			  uint32_t owner)
{
	return r->owner == owner && r->root_len == root_len && r->path_len == path_len &&
	       r->bid_len == bid_len && memcmp(r->key, root, root_len) == 0 &&
	       memcmp(r->key + root_len + 1, path, path_len) == 0 &&
	       (!bid_len || memcmp(r->key + root_len + path_len + 2, bid, bid_len) == 0);
}

static int request_get(struct fr_symbols *s, const char *root, const char *path, const uint8_t *bid,
		       size_t bid_len, struct request **out)
{
	size_t root_len, path_len;
	struct request *req;
	uint64_t hash;
	int ret;

	if (!root)
		root = "";
	if (!bid)
		bid_len = 0;
	root_len = strlen(root);
	path_len = strlen(path);
	if (s->last &&
	    request_match(s->last, root, root_len, path, path_len, bid, bid_len, s->owner)) {
		*out = s->last;
		return 0;
	}
	hash = request_hash(root, root_len, path, path_len, bid, bid_len, s->owner);
	for (struct hnode *n = fr_htable_first(&s->requests, hash); n; n = n->next) {
		req = (struct request *)n;
		if (n->hash == hash &&
		    request_match(req, root, root_len, path, path_len, bid, bid_len, s->owner)) {
			s->last = req;
			*out = req;
			return 0;
		}
	}
	req = calloc(1, sizeof(*req) + root_len + path_len + bid_len + 2);
	if (!req)
		return -ENOMEM;
	req->node.hash = hash;
	req->owner = s->owner;
	req->root_len = root_len;
	req->path_len = path_len;
	req->bid_len = bid_len;
	memcpy(req->key, root, root_len + 1);
	memcpy(req->key + root_len + 1, path, path_len + 1);
	if (bid_len)
		memcpy(req->key + root_len + path_len + 2, bid, bid_len);
	ret = request_resolve(s, req, root, path, bid, bid_len);
	if (ret == -ENOMEM)
		goto err_free;
	req->err = ret;
	if (ret < 0)
		req->image = NULL;
	if (fr_htable_insert(&s->requests, &req->node) < 0) {
		ret = -ENOMEM;
		goto err_free;
	}
	s->last = req;
	*out = req;
	return 0;
err_free:
	free(req);
	return ret;
}

static void request_free(struct hnode *n)
{
	struct request *req = (struct request *)n;

	symbols_elf_free(req->own_debug);
	free(n);
}

/* A debug file's .symtab, when the request found one, names more than the
 * image's own (.dynsym only) tables: it is asked first, except in the PLT,
 * whose stubs only the image names (a debug file would name them after
 * _init). */
static int image_lookup(const struct request *req, uint64_t vaddr, const char **name)
{
	if (req->debug && !fr_elf_image_in_plt(&req->image->elf, vaddr) &&
	    fr_elf_image_lookup(req->debug, vaddr, name) == 0)
		return 0;
	return fr_elf_image_lookup(&req->image->elf, vaddr, name);
}

/* *elf_addr is also stored when the address lies in a PT_LOAD segment but
 * no symbol covers it (-ENOENT): the caller can still report a stable,
 * load-address independent location. */
int fr_symbols_user(struct fr_symbols *s, const char *root, const char *path,
		    const uint8_t *build_id, size_t build_id_len, uint64_t map_start,
		    uint64_t map_pgoff, uint64_t addr, const char **name, uint64_t *elf_addr)
{
	struct request *req;
	uint64_t vaddr;
	int ret;

	if (!s || !path || !name)
		return -EINVAL;
	if (addr < map_start)
		return -ENOENT;
	/* Asked for proof, and no build id to prove it with: no file is
	 * opened at all. */
	if (s->need_build_id && (!build_id || !build_id_len))
		return -ESTALE;
	ret = request_get(s, root, path, build_id, build_id_len, &req);
	if (ret < 0)
		return ret;
	if (req->err < 0)
		return req->err;
	ret = fr_elf_image_translate(&req->image->elf, addr - map_start + map_pgoff, &vaddr);
	if (ret < 0)
		return ret;
	if (elf_addr)
		*elf_addr = vaddr;
	return image_lookup(req, vaddr, name);
}

int fr_symbols_jit(struct fr_symbols *s, uint32_t pid, int64_t start_ns, bool same_root,
		   const char *path, uint64_t addr, const char **name)
{
	char cached[4200];

	if (!s || !path || !name || !fr_perfmap_is_anon(path))
		return -ENOENT;
	if (!s->jit && !(s->jit = fr_perfmaps_new()))
		return -ENOMEM;
	/* A copy made before copies of users' maps carried their uid has
	 * root's name. */
	if (s->cache_dir && start_ns > 0 &&
	    (fr_symcache_perfmap_name(cached, sizeof(cached), s->cache_dir, pid, start_ns,
				      s->owner) < 0 ||
	     (s->owner && access(cached, F_OK) < 0)))
		fr_symcache_perfmap_name(cached, sizeof(cached), s->cache_dir, pid, start_ns, 0);
	return fr_perfmaps_lookup(s->jit, pid, same_root,
				  s->cache_dir && start_ns > 0 ? cached : NULL, addr, name);
}

int fr_symcache_elf_name(char *buf, size_t len, const uint8_t *bid, size_t bid_len, uint32_t owner)
{
	char hex[2 * FR_ELF_BUILD_ID_MAX + 1];
	int n;

	if (!bid_len || bid_len > FR_ELF_BUILD_ID_MAX)
		return -ENAMETOOLONG;
	fr_build_id_hex(bid, bid_len, hex);
	n = owner ? snprintf(buf, len, "%s.u%u", hex, owner) : snprintf(buf, len, "%s", hex);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

void fr_symbols_set_owner(struct fr_symbols *s, uint32_t uid)
{
	s->owner = uid;
}

int fr_symcache_perfmap_name(char *buf, size_t len, const char *dir, uint32_t pid, int64_t start_ns,
			     uint32_t owner)
{
	const char *sep = dir ? "/" : "";
	int n = owner ? snprintf(buf, len, "%s%sperf-%u-%lld.u%u.map", dir ? dir : "", sep, pid,
				 (long long)start_ns, owner)
		      : snprintf(buf, len, "%s%sperf-%u-%lld.map", dir ? dir : "", sep, pid,
				 (long long)start_ns);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

struct fr_dwarf_lines *fr_symbols_user_dwarf(struct fr_symbols *s, const char *root,
					     const char *path, const uint8_t *build_id,
					     size_t build_id_len)
{
	struct request *req;

	/* The request fr_symbols_user() made: no file is opened here. */
	if (!s || !path || request_get(s, root, path, build_id, build_id_len, &req) < 0 ||
	    req->err < 0)
		return NULL;
	if (req->image->elf.dwarf)
		return req->image->elf.dwarf;
	return req->debug ? req->debug->dwarf : NULL;
}

int fr_symbols_kernel(struct fr_symbols *s, uint64_t addr, const char **name)
{
	if (!s || !name)
		return -ENOENT;
	if (!s->kernel)
		s->kernel = fr_kallsyms_get(s->kallsyms);
	return fr_kallsyms_lookup(s->kernel, addr, name);
}

/* ---- lifecycle ---- */

struct fr_symbols *fr_symbols_new(const char *kallsyms)
{
	struct fr_symbols *s;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->kallsyms = strdup(kallsyms ? kallsyms : "/proc/kallsyms");
	if (!s->kallsyms || fr_symbols_set_paths(s, NULL, NULL, 0) < 0) {
		free(s->kallsyms);
		free(s);
		return NULL;
	}
	return s;
}

static void free_dirs(struct fr_symbols *s)
{
	for (size_t i = 0; i < s->ndebug_dirs; i++)
		free(s->debug_dirs[i]);
	free(s->debug_dirs);
	free(s->cache_dir);
	s->debug_dirs = NULL;
	s->ndebug_dirs = 0;
	s->cache_dir = NULL;
}

int fr_symbols_set_paths(struct fr_symbols *s, const char *cache_dir, const char *const *debug_dirs,
			 size_t ndebug_dirs)
{
	static const char *const defaults[] = {FR_SYMBOLS_DEBUG_DIR};

	if (!debug_dirs) {
		debug_dirs = defaults;
		ndebug_dirs = 1;
	}
	free_dirs(s);
	if (cache_dir && !(s->cache_dir = strdup(cache_dir)))
		return -ENOMEM;
	if (ndebug_dirs && !(s->debug_dirs = calloc(ndebug_dirs, sizeof(*s->debug_dirs))))
		goto err;
	for (; s->ndebug_dirs < ndebug_dirs; s->ndebug_dirs++)
		if (!(s->debug_dirs[s->ndebug_dirs] = strdup(debug_dirs[s->ndebug_dirs])))
			goto err;
	return 0;
err:
	free_dirs(s);
	return -ENOMEM;
}

void fr_symbols_free(struct fr_symbols *s)
{
	if (!s)
		return;
	free_dirs(s);
	fr_worker_free(s->worker);
	fr_perfmaps_free(s->jit);
	symbols_python_free(s);
	fr_htable_fini(&s->requests, request_free);
	for (size_t i = 0; i < s->nheld; i++)
		images_put(s->held[i]);
	free(s->held);
	fr_kallsyms_put(s->kernel);
	free(s->kallsyms);
	free(s);
}

void fr_symbols_require_build_id(struct fr_symbols *s)
{
	s->need_build_id = true;
}
