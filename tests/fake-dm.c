/*
 * tests/fake-dm.c - a stand-in for the kernel's device-mapper driver, for
 * tests/test-lvmlockd.sh only (LD_PRELOAD into lvmlockd).
 *
 * This kernel has no device-mapper, so the test runs LVM with
 * global/activation = 0: LVM takes and releases the same locks and
 * creates no device.  But lvmlockd -A 1, when it adopts the locks of the
 * lvmlockd that died, keeps only the LV locks of LVs that device-mapper
 * lists as active (lvmlockd-core.c remove_inactive_lvs: DM_LIST_DEVICES,
 * then DM_DEV_STATUS for each name's uuid), and gives up adopting when it
 * cannot ask.  This library answers those questions, as the driver would,
 * from a table the test writes when it activates an LV (FAKE_DM_TABLE: one
 * "NAME UUID" line per active device, e.g. "vg1-lv1 LVM-<vg uuid><lv
 * uuid>").  It intercepts open() of /dev/mapper/control (the fd is one of
 * /dev/null), ioctl() on that fd for DM_VERSION, DM_LIST_DEVICES and
 * DM_DEV_STATUS (anything else: ENOTTY), and close(); and fopen() of
 * /proc/devices, where it adds the driver's line (libdm learns the
 * device-mapper major there).  Nothing of dlmd or
 * libdlm is faked: the locks lvmlockd adopts are dlmd's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/dm-ioctl.h>

#define CONTROL		"/dev/mapper/control"
#define MAX_DEVS	16
#define FAKE_MAJOR	253	/* device-mapper's usual major */

/* the version we claim: old enough that device names come without uuids
 * in DM_LIST_DEVICES (libdm then asks DM_DEV_STATUS, as lvmlockd does) */
#define FAKE_VERSION_MINOR	27

struct fake_dev {
	char	fd_name[DM_NAME_LEN];
	char	fd_uuid[DM_UUID_LEN];
};

static int control_fd = -1;

static int read_table(struct fake_dev *devs)
{
	const char *path = getenv("FAKE_DM_TABLE");
	char line[DM_NAME_LEN + DM_UUID_LEN + 8];
	FILE *f;
	int n = 0;

	if (!path || !(f = fopen(path, "re")))
		return 0;
	while (n < MAX_DEVS && fgets(line, sizeof(line), f)) {
		char name[DM_NAME_LEN], uuid[DM_UUID_LEN];

		if (sscanf(line, "%127s %128s", name, uuid) != 2)
			continue;
		snprintf(devs[n].fd_name, sizeof(devs[n].fd_name), "%s", name);
		snprintf(devs[n].fd_uuid, sizeof(devs[n].fd_uuid), "%s", uuid);
		n++;
	}
	fclose(f);
	return n;
}

static int (*real_open(void))(const char *, int, ...)
{
	return (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
}

static int open_control(const char *path, int flags, va_list ap)
{
	mode_t mode = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;

	if (path && !strcmp(path, CONTROL)) {
		control_fd = real_open()("/dev/null", O_RDWR | O_CLOEXEC);
		return control_fd;
	}
	return real_open()(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	int fd;

	va_start(ap, flags);
	fd = open_control(path, flags, ap);
	va_end(ap);
	return fd;
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	int fd;

	va_start(ap, flags);
	fd = open_control(path, flags, ap);
	va_end(ap);
	return fd;
}

int close(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "close");

	if (fd >= 0 && fd == control_fd)
		control_fd = -1;
	return real(fd);
}

/* /proc/devices with a device-mapper line added (read whole, then served
 * from memory). */
static FILE *open_proc_devices(FILE *(*real)(const char *, const char *),
			       const char *mode)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *in = real("/proc/devices", mode), *out;
	int ch;

	if (!in)
		return NULL;
	out = open_memstream(&buf, &len);
	if (!out) {
		fclose(in);
		return NULL;
	}
	while ((ch = getc(in)) != EOF)
		putc(ch, out);
	fclose(in);
	fprintf(out, "%d device-mapper\n", FAKE_MAJOR);
	fclose(out);
	/* the buffer lives as long as the process: a few bytes, read once */
	return fmemopen(buf, len, "r");
}

static FILE *fopen_any(const char *sym, const char *path, const char *mode)
{
	FILE *(*real)(const char *, const char *) =
		(FILE *(*)(const char *, const char *))dlsym(RTLD_NEXT, sym);

	if (path && !strcmp(path, "/proc/devices") && mode && mode[0] == 'r')
		return open_proc_devices(real, mode);
	return real(path, mode);
}

FILE *fopen(const char *path, const char *mode)
{
	return fopen_any("fopen", path, mode);
}

FILE *fopen64(const char *path, const char *mode)
{
	return fopen_any("fopen64", path, mode);
}

static int list_devices(struct dm_ioctl *dmi)
{
	struct fake_dev devs[MAX_DEVS];
	int n = read_table(devs);
	char *start = (char *)dmi + dmi->data_start;
	size_t room = dmi->data_size > dmi->data_start ?
		      dmi->data_size - dmi->data_start : 0;
	size_t off = 0;
	struct dm_name_list *prev = NULL;

	if (room < sizeof(struct dm_name_list)) {
		dmi->flags |= DM_BUFFER_FULL_FLAG;
		return 0;
	}
	memset(start, 0, sizeof(struct dm_name_list));	/* dev 0: none */
	for (int i = 0; i < n; i++) {
		size_t len = sizeof(struct dm_name_list) + strlen(devs[i].fd_name) + 1;
		struct dm_name_list *nl;

		len = (len + 7) & ~(size_t)7;
		if (off + len > room) {
			dmi->flags |= DM_BUFFER_FULL_FLAG;
			return 0;
		}
		nl = (struct dm_name_list *)(start + off);
		memset(nl, 0, len);
		nl->dev = ((__u64)FAKE_MAJOR << 8) | (__u64)i;
		strcpy(nl->name, devs[i].fd_name);
		if (prev)
			prev->next = (__u32)((char *)nl - (char *)prev);
		prev = nl;
		off += len;
	}
	dmi->data_size = dmi->data_start + (off ? off : sizeof(struct dm_name_list));
	return 0;
}

static int dev_status(struct dm_ioctl *dmi)
{
	struct fake_dev devs[MAX_DEVS];
	int n = read_table(devs);

	for (int i = 0; i < n; i++) {
		if (strcmp(dmi->name, devs[i].fd_name))
			continue;
		snprintf(dmi->uuid, sizeof(dmi->uuid), "%s", devs[i].fd_uuid);
		dmi->dev = ((__u64)FAKE_MAJOR << 8) | (__u64)i;
		dmi->flags |= DM_ACTIVE_PRESENT_FLAG;
		dmi->target_count = 1;
		dmi->open_count = 0;
		dmi->event_nr = 0;
		dmi->data_size = dmi->data_start;
		return 0;
	}
	errno = ENXIO;
	return -1;
}

int ioctl(int fd, unsigned long req, ...)
{
	int (*real)(int, unsigned long, void *) =
		(int (*)(int, unsigned long, void *))dlsym(RTLD_NEXT, "ioctl");
	struct dm_ioctl *dmi;
	va_list ap;

	va_start(ap, req);
	dmi = va_arg(ap, struct dm_ioctl *);
	va_end(ap);
	if (fd < 0 || fd != control_fd)
		return real(fd, req, dmi);
	dmi->version[0] = DM_VERSION_MAJOR;
	dmi->version[1] = FAKE_VERSION_MINOR;
	dmi->version[2] = 0;
	switch (req) {
	case DM_VERSION:
		return 0;
	case DM_LIST_DEVICES:
		return list_devices(dmi);
	case DM_DEV_STATUS:
		return dev_status(dmi);
	default:
		errno = ENOTTY;
		return -1;
	}
}
