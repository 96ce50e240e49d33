/*
 * plugin/view.c - a view of the cluster laid out as the kernel DLM's
 * configfs (/sys/kernel/config/dlm), for programs that read it.
 *
 * With the kernel DLM, dlm_controld writes the cluster's state into
 * configfs and programs read it there: lvmlockd decides that a DLM runs
 * by reading dlm/cluster/cluster_name, counts the hosts of a lockspace by
 * listing dlm/cluster/spaces/<ls>/nodes before vgremove, lists
 * dlm/cluster/spaces when it restarts to adopt its orphaned locks, and
 * (lvm 2.03.17 and later) finds our node id in dlm/cluster/comms/<id>/local.
 * dlmd has no kernel part, so it keeps the same tree as plain files under
 * dlm.conf configfs_dir (default /run/dlmd/configfs), laid out as
 * /sys/kernel/config is, and the tools shipped with dlmd (dlmd-configfs,
 * the lvmlockd.service drop-in) bind that directory at /sys/kernel/config
 * in the reader's private mount namespace.  The tree, with the kernel's
 * formats (fs/dlm/config.c):
 *
 *   dlm/cluster/cluster_name       "%s\n": corosync's totem.cluster_name
 *   dlm/cluster/tcp_port ...       "%u\n": dlm.conf's port, buffer_size,
 *                                  toss_secs, scan_secs, recover_timer,
 *                                  protocol (0 tcp, 1 sctp; absent for
 *                                  detect), log_debug
 *   dlm/cluster/comms/<id>/        one per node of the quorum's view, as
 *                                  dlm_controld keeps them:
 *       nodeid   "%d\n"
 *       local    "%d\n": 1 for our node, else 0
 *       addr     the node's address as one struct sockaddr_storage (what
 *                dlm_controld writes; write-only in the kernel, here mode
 *                0400), empty when it is not a numeric address
 *       addr_list "AF_INET\t<addr>\n" or "AF_INET6\t<addr>\n"
 *   dlm/cluster/spaces/<ls>/nodes/<id>/{nodeid,weight}
 *                                  a lockspace's members as of its last
 *                                  recovery start (weight 1), from the
 *                                  first start after its creation until
 *                                  it is released
 *
 * Every file is read-only (0444; addr 0400): writing to them changes
 * nothing, so they do not pretend otherwise.  What the kernel's configfs
 * offers to write (tcp_port and friends, the nodes dirs themselves) is
 * configured in dlm.conf and decided by dlmd's own protocol.
 *
 * Updates are atomic for readers: a file is written to a temporary name
 * and renamed over the old one; a lockspace's directory (and comms/) is
 * built whole under a temporary name starting with '.' (which lvmlockd and
 * "ls" skip) and exchanged with the old one (renameat2 RENAME_EXCHANGE),
 * so a reader listing nodes/ sees the old member set or the new one,
 * never a mix; the old one is then removed.  The whole dlm/ tree is
 * removed when dlmd stops; configfs_dir itself stays (it is the mount
 * source of bind mounts that may outlive this dlmd).
 *
 * Refusals, each with one log line: when the kernel DLM is loaded
 * (/sys/kernel/config is configfs and has dlm/), the kernel's own tree is
 * what programs must see and dlmd keeps no view; when another live dlmd
 * holds configfs_dir (an flock on its .dlmd.lock) this one keeps none.
 * Failing writes are logged and dlmd goes on (its locking does not
 * depend on the view); "dlmctl status" says what the view's state is.
 * A failed write (a full file system) leaves the view behind the truth,
 * so from then on every tick (scan_secs) writes the whole view again,
 * without logging each failure, until it is right again (logged): a
 * lockspace created while the file system was full appears once there
 * is room, not only at its next membership change.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <syslog.h>
#include <unistd.h>

#include <corosync/cmap.h>

#include "plugin/dlmd.h"

#define VIEW_DIR_MODE	0755
#define VIEW_FILE_MODE	0444
#define VIEW_ADDR_MODE	0400
#define VIEW_LOCK	".dlmd.lock"
#define VIEW_TOP	"dlm"
#define VIEW_TOP_NEW	".dlm.new"
#define VIEW_TOP_OLD	".dlm.old"
#define VIEW_CLUSTER	"dlm/cluster"
#define VIEW_COMMS	"dlm/cluster/comms"
#define VIEW_SPACES	"dlm/cluster/spaces"
/* prefixes of the temporary names next to the directory they replace */
#define VIEW_NEW	".new."
#define VIEW_OLD	".old."
/* the deepest tree we remove: .dlm.old/cluster/spaces/<ls>/nodes/<id>/file */
#define VIEW_MAX_DEPTH	8
#define KERNEL_CONFIGFS	"/sys/kernel/config"
#define CONFIGFS_MAGIC_NR 0x62656570	/* statfs f_type of configfs */

struct dlmd_view {
	int	v_root;		/* configfs_dir, O_DIRECTORY */
	int	v_lock;		/* configfs_dir/.dlmd.lock, flocked */
	bool	v_ok;		/* the tree is ours and kept up to date */
	char	v_state[128];	/* for dlmctl status */
	char	v_cluster_name[DLM_LOCKSPACE_LEN + 1];
	uint64_t v_nerrors;	/* failed writes since the view was right */
	bool	v_stale;	/* a write failed: dlmd_view_tick() redoes it */
	uint64_t v_quiet;	/* failures while stale, not logged */
};

/* ------------------------------------------------------------------ */
/* files                                                               */
/* ------------------------------------------------------------------ */

/* Write 'len' bytes as dir/name, through a temporary name and rename. */
static int put_file(int dir, const char *name, mode_t mode, const void *buf,
		    size_t len)
{
	char tmp[NAME_MAX + 1];
	const char *p = buf;
	int fd, rv = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
		    O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rv = n < 0 ? -errno : -EIO;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (!rv && fchmod(fd, mode) < 0)
		rv = -errno;
	if (close(fd) < 0 && !rv)
		rv = -errno;
	if (!rv && renameat(dir, tmp, dir, name) < 0)
		rv = -errno;
	if (rv)
		unlinkat(dir, tmp, 0);
	return rv;
}

static int put_text(int dir, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int put_text(int dir, const char *name, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -EOVERFLOW;
	return put_file(dir, name, VIEW_FILE_MODE, buf, (size_t)n);
}

/* mkdir dir/name (0755, whatever the umask) and open it. */
static int make_dir(int dir, const char *name)
{
	int fd;

	if (mkdirat(dir, name, VIEW_DIR_MODE) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, VIEW_DIR_MODE) < 0) {
		int rv = -errno;

		close(fd);
		return rv;
	}
	return fd;
}

/* Remove dir/name and everything under it (no symlinks followed).  The
 * entries are read with getdents64() into a buffer on the stack, not
 * through a DIR (fdopendir() allocates one): the view goes at shutdown
 * even when malloc fails (a cgroup at its MemoryMax), where it was left
 * behind with "Cannot allocate memory". */
static int remove_tree(int dir, const char *name, int depth)
{
	char buf[4096] __attribute__((aligned(8)));
	ssize_t n = 0;
	int fd, rv = 0;

	if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth >= VIEW_MAX_DEPTH)
		return -ELOOP;
	fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	while (!rv && (n = getdents64(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n && !rv;) {
			const struct dirent64 *de = (const void *)(buf + off);

			off += de->d_reclen;
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				rv = remove_tree(fd, de->d_name, depth + 1);
		}
	}
	if (!rv && n < 0)
		rv = -errno;
	close(fd);
	if (!rv && unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rv = -errno;
	return rv;
}

/* Put the directory built as dir/new in place of dir/name (which may not
 * exist): one exchange, then the old one goes. */
static int replace_dir(int dir, const char *new, const char *name)
{
	if (renameat2(dir, new, dir, name, RENAME_EXCHANGE) == 0)
		return remove_tree(dir, new, 0);
	if (errno == ENOENT)	/* no old one */
		return renameat(dir, new, dir, name) < 0 ? -errno : 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* a file system without RENAME_EXCHANGE: readers may see a gap */
	remove_tree(dir, name, 0);
	return renameat(dir, new, dir, name) < 0 ? -errno : 0;
}

/* Take dir/name away at once, then remove it. */
static int drop_dir(int dir, const char *name, const char *old)
{
	if (renameat(dir, name, dir, old) < 0)
		return errno == ENOENT ? 0 : -errno;
	return remove_tree(dir, old, 0);
}

/* A failed write leaves the view behind the truth: it is logged, and
 * each tick writes the whole view again (dlmd_view_tick) until that
 * succeeds; failures meanwhile (the file system stays full) are counted,
 * not logged again. */
static void view_failed(struct dlmd_view *v, const char *what, int rv)
{
	v->v_nerrors++;
	if (v->v_stale)
		v->v_quiet++;
	else
		log_err("configfs view: %s: %s; writing it again every tick "
			"until that works", what, strerror(-rv));
	v->v_stale = true;
	snprintf(v->v_state, sizeof(v->v_state), "%s, last write failed (%s: %s)",
		 v->v_ok ? "on" : "not written", what, strerror(-rv));
}

/* ------------------------------------------------------------------ */
/* the tree                                                            */
/* ------------------------------------------------------------------ */

/* Is a lockspace name one that can be a directory of the view?  Names
 * are graphic ASCII without '/' (dlmp_ls_name_valid); one that starts
 * with '.' would be hidden or clash with the temporary names. */
static bool ls_name_shown(const char *name)
{
	return name[0] && name[0] != '.';
}

/* dlm.conf's protocol as the kernel's cluster/protocol, or -1 for
 * detect (the choice is made per node by comms.c). */
static int kernel_protocol(const struct dlmd_config *cf)
{
	switch (cf->cf_protocol) {
	case DLMD_PROTO_TCP:
		return 0;
	case DLMD_PROTO_SCTP:
		return 1;
	default:
		return -1;
	}
}

static int write_cluster_attrs(struct dlmd *d, int cl)
{
	const struct dlmd_config *cf = &d->d_cfg;
	struct dlmd_view *v = d->d_view;
	int rv;

	rv = put_text(cl, "cluster_name", "%s\n", v->v_cluster_name);
	if (!rv)
		rv = put_text(cl, "tcp_port", "%u\n", cf->cf_port);
	if (!rv)
		rv = put_text(cl, "buffer_size", "%u\n", cf->cf_buffer_size);
	if (!rv)
		rv = put_text(cl, "toss_secs", "%u\n", cf->cf_toss_secs);
	if (!rv)
		rv = put_text(cl, "scan_secs", "%u\n", cf->cf_scan_secs);
	if (!rv)
		rv = put_text(cl, "recover_timer", "%u\n", cf->cf_recover_timer);
	if (!rv)
		rv = put_text(cl, "log_debug", "%u\n",
			      cf->cf_log_level >= LOG_DEBUG ? 1u : 0u);
	if (!rv && kernel_protocol(cf) >= 0)
		rv = put_text(cl, "protocol", "%d\n", kernel_protocol(cf));
	return rv;
}

/* One comms/<id>/ directory, inside 'comms'. */
static int write_comm(struct dlmd *d, int comms, uint32_t id)
{
	const char *text = dlmd_cluster_node_addr(d, id);
	struct sockaddr_storage ss;
	char name[16], line[INET6_ADDRSTRLEN + 16] = "";
	size_t addrlen = 0;
	int dir, rv;

	snprintf(name, sizeof(name), "%u", id);
	dir = make_dir(comms, name);
	if (dir < 0)
		return dir;
	memset(&ss, 0, sizeof(ss));
	if (text[0] && !dlmd_comms_addr_parse(text, 0, &ss)) {
		char a[INET6_ADDRSTRLEN];

		if (ss.ss_family == AF_INET &&
		    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr,
			      a, sizeof(a))) {
			snprintf(line, sizeof(line), "AF_INET\t%s\n", a);
			addrlen = sizeof(ss);
		} else if (ss.ss_family == AF_INET6 &&
			   inet_ntop(AF_INET6,
				     &((struct sockaddr_in6 *)&ss)->sin6_addr,
				     a, sizeof(a))) {
			snprintf(line, sizeof(line), "AF_INET6\t%s\n", a);
			addrlen = sizeof(ss);
		}
	}
	rv = put_text(dir, "nodeid", "%d\n", (int)id);
	if (!rv)
		rv = put_text(dir, "local", "%d\n", id == d->d_nodeid ? 1 : 0);
	if (!rv)
		rv = put_file(dir, "addr", VIEW_ADDR_MODE, &ss, addrlen);
	if (!rv)
		rv = put_file(dir, "addr_list", VIEW_FILE_MODE, line, strlen(line));
	close(dir);
	return rv;
}

/* Is the node in the cluster now, as dlm_controld counts for comms/: a
 * member of the quorum's view (with membership none: ourselves)? */
static bool node_is_up(const struct dlmd *d, uint32_t id)
{
	if (d->d_cfg.cf_membership == DLMD_MEMBERSHIP_NONE)
		return id == d->d_nodeid;
	return dlmd_cluster_quorum_has(d, id);
}

/* Build comms/ whole as .new.comms, then exchange it with comms/. */
static int write_comms(struct dlmd *d, int cl)
{
	uint32_t ids[DLM_MAX_NODES];
	unsigned int n = dlmd_cluster_nodes(d, ids, DLM_MAX_NODES);
	bool self = false;
	int dir, rv = 0;

	remove_tree(cl, VIEW_NEW "comms", 0);
	dir = make_dir(cl, VIEW_NEW "comms");
	if (dir < 0)
		return dir;
	for (unsigned int i = 0; i < n && !rv; i++) {
		if (ids[i] == d->d_nodeid)
			self = true;
		if (node_is_up(d, ids[i]))
			rv = write_comm(d, dir, ids[i]);
	}
	/* membership none has no node list: we are the cluster */
	if (!rv && !self && d->d_nodeid && node_is_up(d, d->d_nodeid))
		rv = write_comm(d, dir, d->d_nodeid);
	close(dir);
	if (!rv)
		rv = replace_dir(cl, VIEW_NEW "comms", "comms");
	if (rv)
		remove_tree(cl, VIEW_NEW "comms", 0);
	return rv;
}

/* Build spaces/.new.<ls>/nodes/<id>/ for the members, then put it in
 * place of spaces/<ls>. */
static int write_space(struct dlmd *d, int spaces, const struct dlmd_ls *dl)
{
	char tmp[NAME_MAX + 1];
	int sp, nodes, rv = 0;

	snprintf(tmp, sizeof(tmp), VIEW_NEW "%s", dl->dl_name);
	remove_tree(spaces, tmp, 0);
	sp = make_dir(spaces, tmp);
	if (sp < 0)
		return sp;
	nodes = make_dir(sp, "nodes");
	close(sp);
	if (nodes < 0) {
		rv = nodes;
		goto out;
	}
	for (unsigned int i = 0; i < dl->dl_nmembers && !rv; i++) {
		char name[16];
		int nd;

		snprintf(name, sizeof(name), "%u", dl->dl_members[i]);
		nd = make_dir(nodes, name);
		if (nd < 0) {
			rv = nd;
			break;
		}
		rv = put_text(nd, "nodeid", "%d\n", (int)dl->dl_members[i]);
		if (!rv)
			rv = put_text(nd, "weight", "%d\n", 1);
		close(nd);
	}
	close(nodes);
	if (!rv)
		rv = replace_dir(spaces, tmp, dl->dl_name);
out:
	if (rv)
		remove_tree(spaces, tmp, 0);
	return rv;
}

static int open_sub(const struct dlmd_view *v, const char *path)
{
	int fd = openat(v->v_root, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
			O_NOFOLLOW);

	return fd < 0 ? -errno : fd;
}

/* corosync's totem.cluster_name, which dlm_controld writes to configfs
 * ("" when there is none, the kernel's default). */
static void read_cluster_name(struct dlmd *d)
{
	struct dlmd_view *v = d->d_view;
	cmap_handle_t h;
	char *name = NULL;

	v->v_cluster_name[0] = '\0';
	if (d->d_cfg.cf_membership != DLMD_MEMBERSHIP_COROSYNC)
		return;
	if (cmap_initialize(&h) != CS_OK) {
		log_warn("configfs view: cannot ask corosync (cmap) for "
			 "totem.cluster_name; cluster_name is empty");
		return;
	}
	if (cmap_get_string(h, "totem.cluster_name", &name) == CS_OK && name) {
		if (strlen(name) > DLM_LOCKSPACE_LEN || strchr(name, '\n'))
			log_warn("configfs view: totem.cluster_name is not one "
				 "line of at most %d bytes; cluster_name is empty",
				 DLM_LOCKSPACE_LEN);
		else
			snprintf(v->v_cluster_name, sizeof(v->v_cluster_name),
				 "%s", name);
		free(name);
	} else {
		log_warn("configfs view: corosync has no totem.cluster_name; "
			 "cluster_name is empty");
	}
	cmap_finalize(h);
}

/* Build dlm/ whole as .dlm.new and put it in place of any left over. */
static int write_top(struct dlmd *d)
{
	struct dlmd_view *v = d->d_view;
	int top, cl, sub, rv;

	remove_tree(v->v_root, VIEW_TOP_NEW, 0);
	top = make_dir(v->v_root, VIEW_TOP_NEW);
	if (top < 0)
		return top;
	cl = make_dir(top, "cluster");
	close(top);
	if (cl < 0) {
		rv = cl;
		goto out;
	}
	rv = write_cluster_attrs(d, cl);
	if (!rv) {
		sub = make_dir(cl, "spaces");
		rv = sub < 0 ? sub : 0;
		if (sub >= 0)
			close(sub);
	}
	if (!rv)
		rv = write_comms(d, cl);
	close(cl);
	if (!rv)
		rv = replace_dir(v->v_root, VIEW_TOP_NEW, VIEW_TOP);
out:
	if (rv)
		remove_tree(v->v_root, VIEW_TOP_NEW, 0);
	return rv;
}

/* ------------------------------------------------------------------ */
/* the kernel's DLM                                                    */
/* ------------------------------------------------------------------ */

bool dlmd_view_kernel_dlm(const char *configfs, char *why, size_t size)
{
	char path[PATH_MAX];
	struct statfs sfs;
	struct stat st;

	if (statfs(configfs, &sfs) < 0 ||
	    (unsigned long)sfs.f_type != CONFIGFS_MAGIC_NR)
		return false;
	snprintf(path, sizeof(path), "%s/dlm", configfs);
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	snprintf(why, size, "%s is configfs and has dlm/: the kernel DLM is "
		 "loaded", configfs);
	return true;
}

/* ------------------------------------------------------------------ */
/* entry points                                                        */
/* ------------------------------------------------------------------ */

/* Make configfs_dir (and its parents) if missing, and open it. */
static int open_root(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, VIEW_DIR_MODE) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, VIEW_DIR_MODE) < 0 && errno != EEXIST)
		return -errno;
	int fd = open(buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

	return fd < 0 ? -errno : fd;
}

/* Hold configfs_dir/.dlmd.lock: one dlmd per view.  0, -EBUSY (its pid
 * in 'holder') or another negative errno. */
static int take_lock(struct dlmd_view *v, char *holder, size_t size)
{
	char buf[32];
	ssize_t n;
	int fd;

	fd = openat(v->v_root, VIEW_LOCK, O_RDWR | O_CREAT | O_CLOEXEC |
		    O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int rv = errno == EWOULDBLOCK ? -EBUSY : -errno;

		n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(holder, size, "%s", buf[0] ? buf : "?");
		close(fd);
		return rv;
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		log_warn("configfs view: cannot record our pid in %s: %s",
			 VIEW_LOCK, strerror(errno));
	v->v_lock = fd;
	return 0;
}

int dlmd_view_init(struct dlmd *d)
{
	const char *root = d->d_cfg.cf_configfs_dir;
	struct dlmd_view *v;
	char why[PATH_MAX + 96];
	int rv;

	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->v_root = v->v_lock = -1;
	d->d_view = v;
	if (!root[0]) {
		snprintf(v->v_state, sizeof(v->v_state), "off (configfs_dir = none)");
		return 0;
	}
	if (dlmd_view_kernel_dlm(KERNEL_CONFIGFS, why, sizeof(why))) {
		log_err("configfs view: not kept: %s, and programs must read "
			"its configfs, not ours", why);
		snprintf(v->v_state, sizeof(v->v_state),
			 "refused (a kernel DLM is loaded)");
		return 0;
	}
	rv = open_root(root);
	if (rv < 0) {
		log_err("configfs view: cannot make %s: %s; no view", root,
			strerror(-rv));
		snprintf(v->v_state, sizeof(v->v_state), "off (%s)", strerror(-rv));
		return 0;
	}
	v->v_root = rv;
	rv = take_lock(v, why, sizeof(why));
	if (rv) {
		if (rv == -EBUSY)
			log_err("configfs view: %s is kept by another dlmd (pid "
				"%s); none from this one", root, why);
		else
			log_err("configfs view: %s/%s: %s; no view", root,
				VIEW_LOCK, strerror(-rv));
		snprintf(v->v_state, sizeof(v->v_state), "off (%s)",
			 rv == -EBUSY ? "kept by another dlmd" : strerror(-rv));
		close(v->v_root);
		v->v_root = -1;
		return 0;
	}
	read_cluster_name(d);
	rv = write_top(d);
	if (rv) {
		view_failed(v, VIEW_CLUSTER, rv);
		return 0;
	}
	v->v_ok = true;
	snprintf(v->v_state, sizeof(v->v_state), "on");
	log_notice("configfs view in %s (cluster_name '%s'): bind it at %s "
		   "for programs that read the kernel DLM's configfs", root,
		   v->v_cluster_name, KERNEL_CONFIGFS);
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next)
		dlmd_view_ls_changed(d, dl);
	return 0;
}

void dlmd_view_fini(struct dlmd *d)
{
	struct dlmd_view *v = d->d_view;

	if (!v)
		return;
	if (v->v_ok) {
		int rv = drop_dir(v->v_root, VIEW_TOP, VIEW_TOP_OLD);

		if (rv)
			log_err("configfs view: cannot remove %s/%s: %s",
				d->d_cfg.cf_configfs_dir, VIEW_TOP, strerror(-rv));
	}
	if (v->v_lock >= 0)
		close(v->v_lock);
	if (v->v_root >= 0)
		close(v->v_root);
	free(v);
	d->d_view = NULL;
}

void dlmd_view_nodes_changed(struct dlmd *d)
{
	struct dlmd_view *v = d->d_view;
	int cl, rv;

	if (!v || !v->v_ok)
		return;
	cl = open_sub(v, VIEW_CLUSTER);
	rv = cl < 0 ? cl : write_comms(d, cl);
	if (cl >= 0)
		close(cl);
	if (rv)
		view_failed(v, VIEW_COMMS, rv);
}

void dlmd_view_ls_changed(struct dlmd *d, const struct dlmd_ls *dl)
{
	struct dlmd_view *v = d->d_view;
	int sp, rv;

	if (!v || !v->v_ok || !ls_name_shown(dl->dl_name))
		return;
	sp = open_sub(v, VIEW_SPACES);
	rv = sp < 0 ? sp : write_space(d, sp, dl);
	if (sp >= 0)
		close(sp);
	if (rv)
		view_failed(v, VIEW_SPACES, rv);
}

void dlmd_view_ls_removed(struct dlmd *d, const struct dlmd_ls *dl)
{
	struct dlmd_view *v = d->d_view;
	char old[NAME_MAX + 1];
	int sp, rv;

	if (!v || !v->v_ok || !ls_name_shown(dl->dl_name))
		return;
	snprintf(old, sizeof(old), VIEW_OLD "%s", dl->dl_name);
	sp = open_sub(v, VIEW_SPACES);
	rv = sp < 0 ? sp : drop_dir(sp, dl->dl_name, old);
	if (sp >= 0)
		close(sp);
	if (rv)
		view_failed(v, VIEW_SPACES, rv);
}

void dlmd_view_tick(struct dlmd *d)
{
	struct dlmd_view *v = d->d_view;
	int cl, sp, rv;

	if (!v || !v->v_stale || v->v_root < 0 || v->v_lock < 0)
		return;
	if (!v->v_ok) {
		rv = write_top(d);
		if (rv) {
			view_failed(v, VIEW_CLUSTER, rv);
			return;
		}
		v->v_ok = true;
	} else {
		cl = open_sub(v, VIEW_CLUSTER);
		rv = cl < 0 ? cl : write_comms(d, cl);
		if (cl >= 0)
			close(cl);
		if (rv) {
			view_failed(v, VIEW_COMMS, rv);
			return;
		}
	}
	sp = open_sub(v, VIEW_SPACES);
	rv = sp < 0 ? sp : 0;
	for (const struct dlmd_ls *dl = d->d_lockspaces; !rv && dl; dl = dl->dl_next)
		if (ls_name_shown(dl->dl_name))
			rv = write_space(d, sp, dl);
	if (sp >= 0)
		close(sp);
	if (rv) {
		view_failed(v, VIEW_SPACES, rv);
		return;
	}
	log_notice("configfs view: up to date again (%llu failed writes, "
		   "%llu of them not logged)", (unsigned long long)v->v_nerrors,
		   (unsigned long long)v->v_quiet);
	v->v_stale = false;
	v->v_nerrors = v->v_quiet = 0;
	snprintf(v->v_state, sizeof(v->v_state), "on");
}

const char *dlmd_view_state(const struct dlmd *d)
{
	return d->d_view ? d->d_view->v_state : "off";
}
