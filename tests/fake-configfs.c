/*
 * tests/fake-configfs.c - makes /sys/kernel/config look like configfs to
 * statfs(2), for tests/test-configfs-view.sh only (LD_PRELOAD).
 *
 * This kernel has no configfs, so nothing here can load a kernel DLM.  The
 * test mounts a tmpfs with a dlm/ directory at /sys/kernel/config in a
 * mount namespace of its own, and this library reports that path's file
 * system type as configfs (CONFIGFS_MAGIC) to statfs(), as a kernel with
 * the DLM module loaded would: dlmd must then refuse to keep its view, and
 * dlmd-configfs must run its program with the kernel's tree.  Every other
 * path, and every other field, is the real statfs's.
 */
#include <dlfcn.h>
#include <string.h>
#include <sys/vfs.h>

#define FAKE_PATH	"/sys/kernel/config"
#define CONFIGFS_MAGIC_NR 0x62656570

static int fake(const char *sym, const char *path, struct statfs *buf)
{
	int (*real)(const char *, struct statfs *) =
		(int (*)(const char *, struct statfs *))dlsym(RTLD_NEXT, sym);
	int rv = real(path, buf);

	if (!rv && !strcmp(path, FAKE_PATH))
		buf->f_type = CONFIGFS_MAGIC_NR;
	return rv;
}

int statfs(const char *path, struct statfs *buf)
{
	return fake("statfs", path, buf);
}

int statfs64(const char *path, struct statfs64 *buf)
{
	int (*real)(const char *, struct statfs64 *) =
		(int (*)(const char *, struct statfs64 *))dlsym(RTLD_NEXT, "statfs64");
	int rv = real(path, buf);

	if (!rv && !strcmp(path, FAKE_PATH))
		buf->f_type = CONFIGFS_MAGIC_NR;
	return rv;
}
