/*
 * plugin/dlmd.h - internals shared by the files of the dlmd daemon.
 *
 * The daemon is one libqb main loop (main.c) around one lock engine
 * instance (core/).  Around the engine sit:
 *
 *   config.c   dlm.conf: keys, defaults, validation
 *   log.c      libqb logging and the in-memory flight recorder
 *   cluster.c  corosync glue: node id and node list (cmap), quorum, one
 *              CPG group for the daemons that carries every lockspace's
 *              membership, and the protocol that agrees on members and
 *              events for recovery
 *   cpgmsg.c   that protocol's CPG messages (header, START, JOIN, LEAVE,
 *              ANNOUNCE, FAILED, FENCE_CLAIM, FENCE_RESULT, LS_RESTART):
 *              encode, decode
 *   comms.c    lowcomms (node-to-node transport) in the loop: engine
 *              messages to and from other nodes
 *   fence.c    fencing of failed nodes before their locks are released:
 *              pacemaker's fencer (libstonithd), fence_command, fence_ack
 *   fence-policy.c  which of those applies, which fencer results
 *              count, and whose turn it is to fence (no I/O;
 *              tests/test-fence.c)
 *   member-policy.c  the members and event a recovery uses, decided
 *              from every member's START (no I/O;
 *              tests/test-member-policy.c)
 *   engine.c   the engine's callbacks (ASTs, messages, recovery
 *              reports) and dlmd_flush(), which delivers what they queued
 *   client.c   the client socket (libdlm's protocol, libdlm/dlmd_proto.h)
 *              and the daemon's lockspaces (create, release)
 *   ctl.c      the control socket dlmctl talks to
 *   view.c     the configfs-compatible view (dlm/cluster/...) that
 *              programs written for the kernel DLM read (lvmlockd)
 *   u32map.c   growing hash maps from 32-bit keys to pointers
 *              (u32map) and to 32-bit values (u32idx)
 *   slab.c     records of one size in pages, named by 32-bit handles
 *   metrics.c  the numbers (metrics.h) as Prometheus text and JSON
 *   metrics-http.c  the optional HTTP endpoint serving them
 *   daemon.c   the wiring: which file above receives what a file below
 *              reports (the *_up tables), and the start of cluster and
 *              engine (main.c and the fuzz targets)
 *
 * Engine callbacks never re-enter the engine: ASTs and messages are queued
 * in struct dlmd and delivered by dlmd_flush() after the entry point that
 * produced them has returned.
 *
 * DEPENDENCIES go one way, down this list (a file calls only files below
 * it, by name):
 *
 *   main.c, daemon.c                  start, stop, wiring
 *   ctl.c, metrics*.c                 read everything below (one
 *                                     level: metrics.c uses ctl.c's
 *                                     string buffer, ctl.c the metrics)
 *   client.c                          the client socket, lockspaces
 *   view.c                            the configfs view
 *   cluster.c                         corosync, the lockspace protocol
 *   fence.c                           fencing
 *   engine.c                          the engine glue, dlmd_flush()
 *   comms.c                           the node-to-node transport
 *   cpgmsg.c, fence-policy.c, member-policy.c, config.c, log.c,
 *   u32map.c, slab.c, core/, lowcomms/
 *
 * A file below reports up only through a table of function pointers the
 * file above gave it (struct dlmd_comms_up, dlmd_fence_up, dlmd_engine_up,
 * dlmd_cluster_up below; daemon.c and cluster.c fill them), so each is
 * read without the ones above it.  tests/plugin-layers.sh checks the
 * order on the built objects.
 *
 * A lock request, followed through the files: client.c decodes it and
 * calls the engine (dlm_core_lock); the engine queues its messages and
 * ASTs through engine.c's callbacks; client.c calls dlmd_flush() (engine.c),
 * which hands messages to comms.c (lowcomms to the master's node) and
 * ASTs up to client.c's dlmd_client_deliver_ast (eu_ast).  On the master
 * node, comms.c hands the message to dlm_core_receive and calls
 * cu_flush (dlmd_flush) for the answer.
 *
 * A node death: cluster.c gets the confchg (node-down) from corosync,
 * stops each lockspace the node was in (dlm_core_ls_stop) and calls
 * fence.c (dlmd_fence_node_failed); fence.c fences it and reports it
 * fenced through fu_changed; cluster.c then agrees on the new members and
 * event (START messages, member-policy.c's decision), starts the engine's
 * recovery (dlm_core_ls_start) and, when the engine reports it done
 * (eu_recovery_done via engine.c), finishes it (dlm_core_ls_finish) and
 * dlmd_flush() delivers the ASTs of what was granted.
 *
 * READING.md (top of the tree) follows both, one file:function a line,
 * with the reason for each return to a file already visited.
 */
#ifndef DLMD_PLUGIN_DLMD_H
#define DLMD_PLUGIN_DLMD_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <qb/qbloop.h>
#include <qb/qblog.h>

#include "core/core.h"
#include "libdlm/dlmd_proto.h"
#include "plugin/metrics.h"

#define DLMD_DEFAULT_CONF	"/etc/dlm/dlm.conf"
#define DLMD_DEFAULT_PIDFILE	"/run/dlmd/dlmd.pid"
/* corosync's authkey: dlm.conf key_file names another (lowcomms/auth.c). */
#define DLMD_DEFAULT_KEY_FILE	"/etc/corosync/authkey"
/* The configfs-compatible view (plugin/view.c): dlm.conf configfs_dir. */
#define DLMD_DEFAULT_CONFIGFS_DIR	"/run/dlmd/configfs"
#define DLMD_SUN_PATH_MAX	108	/* sizeof(sockaddr_un.sun_path) */
#define DLMD_ADDR_LEN		64	/* a node address as text (ring0_addr) */
#define DLMD_REMASTER_WINDOW	32	/* remaster_window default: the engine's
					   own (core/remaster.c) */

/* The open-addressing table under u32map and u32idx (u32map.c): a slot
 * is a 32-bit key and its value right after it, 4 + the value's size
 * bytes, in one array; linear probing, grows at 1/2 load. */
struct u32tab {
	unsigned char	*t_slots;
	uint32_t	t_cap;		/* power of two, or 0 */
	uint32_t	t_count;
	uint32_t	t_used;		/* live + tombstones */
};

/* A u32 -> pointer hash map: 12-byte slots (8 on 32-bit). */
struct u32map {
	struct u32tab	um_tab;
};
void *u32map_get(const struct u32map *m, uint32_t key);
/* Make room so that n more puts cannot fail.  0 or -ENOMEM. */
int u32map_reserve(struct u32map *m, uint32_t n);
/* Insert or replace; key must be neither 0 nor UINT32_MAX.  0, -EINVAL
 * or -ENOMEM. */
int u32map_put(struct u32map *m, uint32_t key, void *val);
void *u32map_del(struct u32map *m, uint32_t key);
/* Visit every entry; fn may not modify the map. */
void u32map_each(const struct u32map *m, void (*fn)(void *arg, uint32_t key, void *val),
		 void *arg);
void u32map_free(struct u32map *m);
static inline uint32_t u32map_count(const struct u32map *m)
{
	return m->um_tab.t_count;
}

/* A u32 -> u32 hash map: the key and its value side by side in one
 * 8-byte slot. */
struct u32idx {
	struct u32tab	ui_tab;
};
/* Whether 'key' is there, and its value in *val. */
bool u32idx_get(const struct u32idx *m, uint32_t key, uint32_t *val);
/* Make room so that n more puts cannot fail.  0 or -ENOMEM. */
int u32idx_reserve(struct u32idx *m, uint32_t n);
/* Insert or replace; key must be neither 0 nor UINT32_MAX.  0, -EINVAL
 * or -ENOMEM. */
int u32idx_put(struct u32idx *m, uint32_t key, uint32_t val);
/* Remove 'key'; whether it was there, and its value in *val. */
bool u32idx_del(struct u32idx *m, uint32_t key, uint32_t *val);
/* Visit every entry; fn may not modify the map. */
void u32idx_each(const struct u32idx *m,
		 void (*fn)(void *arg, uint32_t key, uint32_t val), void *arg);
void u32idx_free(struct u32idx *m);
static inline uint32_t u32idx_count(const struct u32idx *m)
{
	return m->ui_tab.t_count;
}

/* Records of one size named by 32-bit handles, in pages (slab.c). */
#define SLAB_PAGE_RECS	1024u
struct slab_page {
	struct slab_page *sp_prev, *sp_next;	/* on sl_avail */
	uint32_t	sp_index;	/* in sl_pages */
	uint32_t	sp_used;	/* records in use */
	uint32_t	sp_fresh;	/* records handed out at least once */
	uint32_t	sp_free;	/* first free record's place + 1, or 0 */
	unsigned char	sp_recs[];
};
struct slab {
	size_t		sl_size;	/* a record's size, 0 before the first */
	struct slab_page **sl_pages;	/* the directory (NULL: a hole) */
	uint32_t	*sl_holes;	/* its free slots */
	uint32_t	sl_npages;	/* its slots used, holes included */
	uint32_t	sl_nholes;
	uint32_t	sl_dircap;
	uint64_t	sl_count;	/* records in use */
	struct slab_page *sl_avail;	/* pages with a free record */
	struct slab_page *sl_spare;	/* the one empty page kept, or NULL */
};
/* A zeroed record of 'size' bytes (a multiple of 8, at least 8, the same
 * at every call) and its handle in *handle, or NULL. */
void *slab_alloc(struct slab *s, size_t size, uint32_t *handle);
void slab_free(struct slab *s, uint32_t handle);
/* Pages held (for tests). */
uint32_t slab_pages(const struct slab *s);
/* Free everything (records in use too). */
void slab_fini(struct slab *s);
/* The record a live handle names. */
static inline void *slab_rec(const struct slab *s, uint32_t handle)
{
	return s->sl_pages[handle / SLAB_PAGE_RECS]->sp_recs +
	       (size_t)(handle % SLAB_PAGE_RECS) * s->sl_size;
}

/* ------------------------------------------------------------------ */
/* config                                                              */
/* ------------------------------------------------------------------ */

enum dlmd_membership {
	DLMD_MEMBERSHIP_COROSYNC = 0,
	DLMD_MEMBERSHIP_NONE = 1,	/* one node, no corosync (tests, fuzzing) */
};

/* dlm.conf fence_pacemaker: use pacemaker's fencer (plugin/fence.c). */
enum dlmd_fence_pcmk {
	DLMD_FENCE_PCMK_AUTO = 0,	/* when the fencer is reachable */
	DLMD_FENCE_PCMK_YES = 1,	/* always; wait while it is not */
	DLMD_FENCE_PCMK_NO = 2,		/* never */
};

/* Node-to-node transport (dlm.conf protocol). */
enum dlmd_protocol {
	DLMD_PROTO_TCP = 0,		/* default */
	DLMD_PROTO_SCTP = 1,		/* multi-homed: every corosync ring address */
	DLMD_PROTO_DETECT = 2,		/* SCTP when we have several addresses, else TCP */
};

struct dlmd_config {
	char			cf_file[PATH_MAX];	/* "" when none was read */
	uint32_t		cf_port;
	int			cf_protocol;	/* enum dlmd_protocol */
	uint32_t		cf_buffer_size;
	uint32_t		cf_toss_secs;
	uint32_t		cf_max_tossed;	/* 0: no bound */
	uint32_t		cf_audit_secs;
	uint32_t		cf_deadlock_secs;
	uint32_t		cf_remaster_secs;	/* 0: no remastering */
	uint32_t		cf_remaster_window;
	uint32_t		cf_remaster_shared;	/* 1: the re-point protocol */
	uint32_t		cf_fold;	/* 1: fold lone locks (core/solo.c) */
	uint32_t		cf_scan_secs;
	uint32_t		cf_recover_timer;
	uint32_t		cf_peer_unreachable_secs;	/* 0: never */
	char			cf_socket_path[DLMD_SUN_PATH_MAX];
	char			cf_ctl_socket_path[DLMD_SUN_PATH_MAX];
	char			cf_pid_file[PATH_MAX];
	uid_t			cf_socket_uid;
	gid_t			cf_socket_gid;
	mode_t			cf_socket_mode;
	bool			cf_have_admin_group;
	gid_t			cf_admin_gid;
	int			cf_log_level;		/* syslog LOG_* */
	bool			cf_log_syslog;
	enum dlmd_membership	cf_membership;
	uint32_t		cf_nodeid;		/* membership none only */
	bool			cf_enable_fencing;
	char			cf_fence_command[1024];	/* "" = none */
	uint32_t		cf_fence_timeout_secs;	/* then it is killed */
	enum dlmd_fence_pcmk	cf_fence_pcmk;
	/* a failure no newer fencing in the fencer's history answers after
	 * this long: dlmd asks the fencer itself (fence.c) */
	uint32_t		cf_fence_pcmk_wait_secs;
	bool			cf_fence_pcmk_off;	/* ask "off", not "reboot" */
	uint32_t		cf_flight_lines;
	/* Node-to-node security (lowcomms/auth.c): crypto = key | none. */
	bool			cf_crypto_none;
	char			cf_key_file[PATH_MAX];
	/* OpenSSL's secure heap, the session keys' (lowcomms/secret.c) */
	uint32_t		cf_secure_heap_size;
	uint32_t		cf_max_clients_per_uid;	/* root is exempt */
	uint32_t		cf_ast_queue_limit;	/* bytes, all clients */
	uint32_t		cf_max_locks_per_uid;	/* root is exempt */
	uint32_t		cf_client_spin_us;	/* client.c "Watching the
							 * rings"; 0: off */
	uint32_t		cf_peer_spin_us;	/* comms.c "WATCHING THE
							 * PEERS"; 0: off */
	/* the configfs-compatible view's root ("" = none): plugin/view.c */
	char			cf_configfs_dir[PATH_MAX];
	/* the metrics endpoint (plugin/metrics-http.c): "" = off, else
	 * "ADDR:PORT" (IPv6 as "[ADDR]:PORT") or an absolute unix socket path */
	char			cf_metrics_listen[DLMD_SUN_PATH_MAX];
};

void dlmd_config_defaults(struct dlmd_config *cf);
/* Read 'path' over the defaults.  On error prints "FILE:LINE: why" to
 * stderr and returns a negative errno.  A missing file is an error only
 * when 'must_exist'. */
int dlmd_config_load(struct dlmd_config *cf, const char *path, bool must_exist);
int dlmd_config_parse(struct dlmd_config *cf, FILE *f, const char *path,
		      FILE *errf);
/* metrics_listen's value as an address to bind (config.c): 0 or
 * -EINVAL. */
struct sockaddr_storage;
int dlmd_metrics_addr_parse(const char *text, struct sockaddr_storage *ss,
			    socklen_t *len);
/* The effective configuration as "key = value" lines (malloc'd). */
char *dlmd_config_dump(const struct dlmd_config *cf);

/* ------------------------------------------------------------------ */
/* logging and flight recorder                                         */
/* ------------------------------------------------------------------ */

int dlmd_log_init(const struct dlmd_config *cf, bool to_stderr);
void dlmd_log_fini(void);
/* Log lines stderr or syslog had no room for (log.c "Sinks that never
 * wait"): dropped, not waited for. */
uint64_t dlmd_log_dropped(void);
/* The flight recorder's lines, oldest first, as one malloc'd string. */
char *dlmd_log_flight_dump(void);
/* Text from outside (a client, a peer, a command line) made safe to log
 * or print: graphic ASCII and space are kept, every other byte and '\'
 * become \xHH, so nothing can end a log line or fake another.  Writes at
 * most size bytes (NUL included; cut short when it does not fit) into
 * buf and returns buf. */
char *dlmd_escape(const char *s, char *buf, size_t size);
/* The size of buffer dlmd_escape() needs for n input bytes. */
#define DLMD_ESCAPED_SIZE(n)	((n) * 4 + 1)

#define log_crit(fmt, ...)	qb_log(LOG_CRIT, fmt, ##__VA_ARGS__)
#define log_err(fmt, ...)	qb_log(LOG_ERR, fmt, ##__VA_ARGS__)
#define log_warn(fmt, ...)	qb_log(LOG_WARNING, fmt, ##__VA_ARGS__)
#define log_notice(fmt, ...)	qb_log(LOG_NOTICE, fmt, ##__VA_ARGS__)
#define log_info(fmt, ...)	qb_log(LOG_INFO, fmt, ##__VA_ARGS__)
#define log_debug(fmt, ...)	qb_log(LOG_DEBUG, fmt, ##__VA_ARGS__)

/* ------------------------------------------------------------------ */
/* the daemon                                                          */
/* ------------------------------------------------------------------ */

struct dlmd_cluster;
struct dlmd_cluster_ls;
struct dlmd_comms;
struct dlmd_fence;
struct dlmd_view;

/* One lockspace as the daemon sees it (the engine's ls_ctx). */
struct dlmd_ls {
	struct dlmd_ls		*dl_next;
	char			dl_name[DLM_LOCKSPACE_LEN + 1];
	struct dlm_ls		*dl_core;
	mode_t			dl_mode;	/* who may open it (like the device mode) */
	uid_t			dl_uid;		/* its creator */
	gid_t			dl_gid;
	uint32_t		dl_nopen;	/* client connections bound to it */
	/* creations not yet released (LS_CREATE, "dlmctl join"): as in the
	 * kernel, a release only removes the lockspace at the last one */
	uint32_t		dl_ncreates;
	uint32_t		dl_members[DLM_MAX_NODES];
	unsigned int		dl_nmembers;
	struct dlmd_cluster_ls	*dl_cluster;	/* cluster.c's per-lockspace state */
	/* who left the orphans here: owner serial -> struct dlmd_orphan_owner
	 * (client.c; adopting or purging an orphan needs its user or the
	 * lockspace-admin privilege) */
	struct u32map		dl_orphan_owners;
	/* LS_CREATE requests answered once the first recovery finished */
	struct dlmd_create_wait	*dl_waits;
	unsigned int		dl_nwaits;
	struct dlmd_ls_metrics	dl_metrics;	/* metrics.h */
};

struct dlmd_create_wait {
	uint32_t	cw_serial;	/* the client */
	uint32_t	cw_reqid;
};

/* A reply that a request handler will send later (see dl_waits). */
#define DLMD_REPLY_DEFERRED	1
/* A DLMP_LK_SYNC request held until its completion (client.c). */
#define DLMD_REPLY_HELD		2

/* An AST the engine produced, waiting for dlmd_flush(). */
struct dlmd_pending_ast {
	uint64_t	pa_owner;
	uint32_t	pa_lkid;
	uint8_t		pa_type;	/* DLM_AST_COMP / BAST */
	int8_t		pa_grmode;
	int8_t		pa_bastmode;
	uint8_t		pa_sbflags;
	int32_t		pa_status;
	bool		pa_has_lvb;
	char		pa_lvb[DLM_LVB_LEN];
};

/* A message the engine wants sent, waiting for dlmd_flush(). */
struct dlmd_pending_msg {
	struct dlmd_pending_msg	*pm_next;
	uint32_t		pm_to;
	bool			pm_reserve;	/* one of engine.c's reserve */
	size_t			pm_len;
	unsigned char		pm_buf[];
};

struct dlmd_client;
struct dlmd_ctl_conn;
struct dlmd_http_conn;

/* A listening socket of ctl.c or metrics-http.c, and its pause when
 * accept() runs out of fds (dlmd_accept). */
#define DLMD_ACCEPT_PAUSE_MS	500
struct dlmd_accept_pause {
	qb_loop_t		*ap_loop;
	const int		*ap_fd;		/* the socket; -1: closed */
	qb_loop_poll_dispatch_fn ap_accept;	/* its POLLIN handler ... */
	void			*ap_data;	/* ... and what it is given */
	qb_loop_timer_handle	ap_timer;	/* 0: not paused */
};

struct dlmd {
	struct dlmd_config	d_cfg;
	qb_loop_t		*d_loop;
	struct dlm_core		*d_core;
	uint32_t		d_nodeid;
	int			d_exit_code;
	uint64_t		d_start_ms;
	int			d_listen_fd;
	int			d_ctl_fd;
	struct dlmd_ls		*d_lockspaces;
	unsigned int		d_nlockspaces;
	struct u32map		d_clients;	/* serial -> struct dlmd_client */
	uint32_t		d_next_serial;
	struct dlmd_ctl_conn	*d_ctl_conns;
	struct dlmd_cluster	*d_cluster;
	struct dlmd_comms	*d_comms;
	struct dlmd_fence	*d_fence;
	struct dlmd_view	*d_view;	/* view.c; NULL: none */
	/* engine output, delivered by dlmd_flush() */
	struct dlmd_pending_ast	*d_asts;
	size_t			d_nasts;
	size_t			d_asts_cap;
	struct dlmd_pending_msg	*d_msgs;
	struct dlmd_pending_msg	**d_msgs_tail;
	/* comms.c could not take these (out of memory): tried again first */
	struct dlmd_pending_msg	*d_held;
	struct dlmd_pending_msg	**d_held_tail;
	qb_loop_timer_handle	d_held_timer;
	bool			d_held_armed;
	/* our own messages the engine did not take (out of memory): offered
	 * again first, in order, at every flush (engine.c) */
	struct dlmd_pending_msg	*d_self_held;
	struct dlmd_pending_msg	**d_self_held_tail;
	unsigned int		d_self_nheld;
	uint64_t		d_self_held_since;	/* ms, 0: none */
	uint64_t		d_self_not_taken;	/* refusals */
	/* preallocated messages for when malloc fails (engine.c) */
	struct dlmd_pending_msg	*d_msg_reserve;
	bool			d_cannot_hold;	/* the reserve ran out: stopping */
	bool			d_stop_accepted; /* SIGTERM/SIGINT accepted (main.c):
						 * no lockspace is created or opened
						 * and no lock requested any more */
	const struct dlmd_engine_up *d_engine_up;
	/* counters for dlmctl status */
	uint64_t		d_nrequests;
	uint64_t		d_nasts_sent;
	uint64_t		d_nbad_requests;
	uint64_t		d_nring_requests; /* taken from request rings */
	uint64_t		d_nring_kicks;	/* ring kicks: wake-ups asked */
	uint64_t		d_nans_ring;	/* answers into answer rings */
	uint64_t		d_nans_wakes;	/* ... clients woken for them */
	uint64_t		d_nans_full;	/* answer rings found full */
	uint64_t		d_nring_catchups; /* socket packets (kicks too)
						   * that found their ring
						   * not empty */
	uint64_t		d_nclients_total;
	/* client.c "Watching the rings": the clients whose rings are
	 * watched, until d_watch_until (CLOCK_MONOTONIC ns); the timer
	 * that looks at them; the watch is being ended */
	struct dlmd_client	*d_watch;
	unsigned int		d_nwatched;
	uint64_t		d_watch_until;
	qb_loop_timer_handle	d_watch_timer;
	bool			d_watch_job;	/* d_watch_timer is set */
	bool			d_watch_ending;
	uint64_t		d_nwatch_sleeps; /* watches ended: rings told
						  * dlmd sleeps */
	uint64_t		d_nwatch_yields_long; /* ... by a long yield */
	uint64_t		d_nring_sleeps;	/* rings told dlmd sleeps
						 * (rg_sleeping = 1 stuck;
						 * at a ring's start too) */
	uint64_t		d_nring_socket_locks; /* LOCKs, UNLOCKs on the
						 * socket of a client with
						 * a ring (it found
						 * rg_sleeping, took it) */
	uint64_t		d_watch_off_until; /* no watch before (ns) */
	uint64_t		d_watch_off_ns;	/* the last such pause, 0 */
	unsigned int		d_watch_good;	/* rounds that took since */
	/* limits (client.c) */
	struct u32map		d_uid_conns;	/* uid -> connections (as a count) */
	struct u32map		d_uid_astbufs;	/* uid -> its AST sockets with a
						 * raised buffer (a count) */
	uint64_t		d_nast_raised;	/* AST sockets with a raised
						 * buffer, all users */
	struct u32map		d_uid_rings;	/* uid -> its mapped rings (a
						 * count; client.c RINGS_PER_UID) */
	struct u32map		d_uid_locks;	/* uid -> its locks and orphans
						 * (client.c struct uid_locks) */
	struct slab		d_lkcbs;	/* client.c's lock records
						 * (struct lkcb) */
	uint64_t		d_nrefused_locks; /* locks refused: max_locks_per_uid */
	uint64_t		d_quota_log_ms;	/* rate limit of its line */
	uint64_t		d_quota_nquiet;
	uint64_t		d_astq_bytes;	/* unread ASTs queued, all clients */
	uint64_t		d_nrefused;	/* connections refused: per-uid limit */
	uint64_t		d_ncut_slow;	/* clients cut: ast_queue_limit */
	bool			d_astq_timer_armed; /* past ast_queue_limit, nobody
						 * stuck yet: look again */
	qb_loop_timer_handle	d_astq_timer;
	uint64_t		d_npauses;	/* clients paused: their own
						 * unread ASTs (client.c) */
	uint32_t		d_npaused;	/* ... paused now */
	bool			d_accept_paused; /* fds ran out: not accepting */
	bool			d_clients_closing; /* dlmd_client_fini runs: nothing more is
						 * told to any client (a grant a purge made
						 * would reach a client after dlmd stopped) */
	bool			d_stop_unclean;	/* ... and a client held or waited for a
						 * lock: no lockspace is left cleanly, so the
						 * others fence this node before they recover
						 * (cluster.c dlmd_cluster_ls_leave, _fini) */
	qb_loop_timer_handle	d_accept_timer;
	struct dlmd_accept_pause d_ctl_pause;	/* ctl.c, the same for dlmctl */
	uint64_t		d_accept_log_ms; /* rate limit of the fd-exhaustion line */
	uint64_t		d_refuse_log_ms; /* ... and of the per-uid refusal line */
	uint64_t		d_accept_nquiet; /* events since the last such line */
	uint64_t		d_fdlost_log_ms; /* ... and of the lost-fd line */
	uint64_t		d_fdlost_nquiet;
	uint64_t		d_proto_log_ms;	/* ... and of the line of a client of
						 * another client protocol version */
	uint64_t		d_proto_nquiet;
	uint64_t		d_nfd_lost;	/* requests whose fd the kernel dropped */
	uint64_t		d_ncpg_unverified; /* daemon group messages
						    * that did not verify */
	uint64_t		d_nfence_forgiven; /* node failures forgiven
						    * (cluster.c, FORGIVING A
						    * SPLIT) */
	uint64_t		d_nfence_lied;	/* fencings that did not stop
						 * their node: seen alive after
						 * (cluster.c, FENCED ALIVE) */
	uint64_t		d_refuse_nquiet;
	struct dlmd_metrics	d_metrics;	/* metrics.h */
	int			d_metrics_fd;	/* the endpoint's; -1: off */
	struct dlmd_http_conn	*d_http_conns;
	unsigned int		d_nhttp_conns;
	struct dlmd_accept_pause d_metrics_pause;
};

uint64_t dlmd_now_ms(void);

/* engine.c */
/* What engine.c reports up (daemon.c fills it). */
struct dlmd_engine_up {
	/* client.c: write one AST to its owner (dlmd_client_deliver_ast) */
	void	(*eu_ast)(struct dlmd *d, const struct dlmd_pending_ast *pa);
	/* cluster.c: the engine's recovery of 'event' is done / failed */
	void	(*eu_recovery_done)(struct dlmd *d, struct dlm_ls *ls,
				    uint32_t event);
	void	(*eu_recovery_failed)(struct dlmd *d, struct dlm_ls *ls,
				      uint32_t event, int error);
};
/* Create the engine (d_core) with our callbacks.  0 or -ENOMEM. */
int dlmd_engine_new(struct dlmd *d, const struct dlmd_engine_up *up);
/* Free the engine and what its callbacks queued. */
void dlmd_engine_free(struct dlmd *d);
/* Deliver what the engine queued (ASTs, messages), until nothing is left. */
void dlmd_flush(struct dlmd *d);
/* Out of memory where a message or an AST would be lost (what, arg name
 * it in the log): dlmd stops, exit status 1 (engine.c). */
void dlmd_cannot_hold(struct dlmd *d, const char *what, uint32_t arg);
/* Messages the engine did not take and that wait to be offered again
 * (ours, and one per held peer: comms.c); the one held longest: its
 * sender and since when (ms).  0: none. */
unsigned int dlmd_held(const struct dlmd *d, uint32_t *nodeid,
		       uint64_t *since_ms);

/* daemon.c: start the cluster glue (and fencing, comms) and the engine,
 * wired to each other.  0 or a negative errno (logged). */
int dlmd_daemon_start(struct dlmd *d);

/* client.c */
int dlmd_client_listen(struct dlmd *d);
void dlmd_client_fini(struct dlmd *d);
/* Write one AST the engine produced to its owner (eu_ast). */
void dlmd_client_deliver_ast(struct dlmd *d, const struct dlmd_pending_ast *pa);
struct dlmd_ls *dlmd_ls_find(struct dlmd *d, const char *name);
/* Create (or find, unless 'excl') the lockspace.  0 or negative errno. */
int dlmd_ls_create(struct dlmd *d, const char *name, mode_t mode, uid_t uid,
		   gid_t gid, bool excl, struct dlmd_ls **out);
/* Remove a lockspace; -EBUSY if clients or locks remain and !force. */
bool dlmd_ls_in_use(struct dlmd_ls *dl);
int dlmd_ls_release(struct dlmd *d, struct dlmd_ls *dl, bool force,
		    const struct dlmd_client *except);
unsigned int dlmd_client_count(const struct dlmd *d);
/* A client paused for its unread ASTs, as ctl.c status shows it. */
struct dlmd_paused_client {
	pid_t		pc_pid;
	uid_t		pc_uid;
	uint32_t	pc_serial;
	uint32_t	pc_queued_asts;
};
/* fn for every client paused now (in no particular order). */
void dlmd_client_each_paused(struct dlmd *d,
			     void (*fn)(void *arg,
					const struct dlmd_paused_client *pc),
			     void *arg);
/* Take what c's request ring holds, answers batched (what a kick
 * does; fuzz targets call it). */
void dlmd_client_ring_take(struct dlmd *d, struct dlmd_client *c);
/* Answers held for the client's DLMP_LK_SYNC requests (client.c). */
unsigned int dlmd_client_nheld(const struct dlmd_client *c);
/* Handle one request packet from client 'c' (also used by the fuzzer). */
void dlmd_client_request(struct dlmd *d, struct dlmd_client *c,
			 const void *buf, size_t len, int passed_fd);
/* The same for a packet read from c's socket: what c's request ring
 * holds is taken first (the order; dlmd_proto.h "The request ring"). */
void dlmd_client_socket_request(struct dlmd *d, struct dlmd_client *c,
				const void *buf, size_t len, int passed_fd);
/* For the fuzzer: a client on an already connected fd with given creds. */
struct dlmd_client *dlmd_client_new(struct dlmd *d, int fd, pid_t pid,
				    uid_t uid, gid_t gid);
void dlmd_client_close(struct dlmd *d, struct dlmd_client *c);

/* ctl.c */
/* A growing string (the control socket's and the metrics' replies). */
struct dlmd_sbuf {
	char	*sb_s;
	size_t	sb_len;
	size_t	sb_cap;
	bool	sb_oom;		/* an allocation failed: sb_s is incomplete */
	/* a buffer the caller lends for when growing fails (out of
	 * memory: the control socket still answers); sb_lent once sb_s is
	 * it: then sb_s is not the caller's to free (dlmd_sb_free) */
	char	*sb_spare;
	size_t	sb_spare_cap;
	bool	sb_lent;
};
void dlmd_sb_printf(struct dlmd_sbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Free sb_s unless it is the lent buffer. */
void dlmd_sb_free(struct dlmd_sbuf *sb);
/* s as a JSON string, quotes included. */
void dlmd_json_str(struct dlmd_sbuf *sb, const char *s);
/* Write buf[*off..len) to the non-blocking fd as far as it takes it,
 * advancing *off: 1 all written, 0 it would block (wait for POLLOUT),
 * -1 the peer is gone or the send failed. */
int dlmd_send_rest(int fd, const char *buf, size_t len, size_t *off);
/* accept4() a connection on ap's socket, non-blocking, close-on-exec:
 * its fd, or -1 when there is none to take.  Out of fds (EMFILE, ENFILE,
 * ENOBUFS, ENOMEM) the socket leaves the loop for DLMD_ACCEPT_PAUSE_MS,
 * its connections waiting in the backlog, instead of waking the loop
 * again at once; then it is polled again.  (client.c's socket, which logs
 * the exhaustion, has its own pause.) */
int dlmd_accept(struct dlmd_accept_pause *ap);
/* bind() to a unix socket path, the file made with 'mode' (ctl.c); a
 * socket already there (stale) is removed first, any other file is left
 * alone and the bind fails (-EEXIST, logged). */
int dlmd_bind_unix(int fd, const struct sockaddr *sa, socklen_t len, mode_t mode);
/* Cancel a pause, before the socket closes. */
void dlmd_accept_unpause(struct dlmd_accept_pause *ap);
int dlmd_ctl_listen(struct dlmd *d);
void dlmd_ctl_fini(struct dlmd *d);
/* One control request line answered in memory (tests/fuzz-ctl.c). */
char *dlmd_ctl_answer(struct dlmd *d, char *line);

/* cluster.c */
/* What cluster.c reports up (daemon.c fills it). */
struct dlmd_cluster_up {
	/* client.c: the first recovery of a created lockspace finished (0)
	 * or the lockspace went away (negative errno): answer the held
	 * LS_CREATEs (dlmd_ls_join_done) */
	void	(*cu_ls_join_done)(struct dlmd *d, struct dlmd_ls *dl, int status);
	/* client.c: our instance of the lockspace is stale: release it, its
	 * clients lose their locks.  0 or a negative errno. */
	int	(*cu_ls_drop)(struct dlmd *d, struct dlmd_ls *dl);
	/* view.c: a lockspace started with new members; the quorum's node
	 * view changed */
	void	(*cu_view_ls_changed)(struct dlmd *d, const struct dlmd_ls *dl);
	void	(*cu_view_nodes_changed)(struct dlmd *d);
};
int dlmd_cluster_init(struct dlmd *d, const struct dlmd_cluster_up *up);
void dlmd_cluster_fini(struct dlmd *d);
/* Join the lockspace's group and fill dl_members.  0 or negative errno. */
int dlmd_cluster_ls_join(struct dlmd *d, struct dlmd_ls *dl);
void dlmd_cluster_ls_leave(struct dlmd *d, struct dlmd_ls *dl);
/* The engine created the lockspace: hold it until its first recovery. */
void dlmd_cluster_ls_created(struct dlmd *d, struct dlmd_ls *dl);
/* Has the lockspace's first membership been agreed and recovered? */
bool dlmd_cluster_ls_ready(const struct dlmd *d, const struct dlmd_ls *dl);
/* The engine's recovery of 'event' is done / failed (eu_recovery_*). */
void dlmd_cluster_recovery_done(struct dlmd *d, struct dlm_ls *ls, uint32_t event);
void dlmd_cluster_recovery_failed(struct dlmd *d, struct dlm_ls *ls,
				  uint32_t event, int error);
/* A node's fencing state changed: lockspaces may go on. */
void dlmd_cluster_fencing_changed(struct dlmd *d);
/* corosync asked us to retry a send: try again shortly. */
void dlmd_cluster_retry_later(struct dlmd *d);
/* Frames from a member were lost (lowcomms found a sequence gap): the
 * higher id of the two leaves the cluster and is fenced. */
void dlmd_cluster_frames_lost(struct dlmd *d, uint32_t nodeid);
/* What a lockspace is doing, for dlmctl ls. */
struct dlmd_ls_view {
	const char	*lv_state;		/* the engine's state */
	uint32_t	lv_event;
	uint32_t	lv_group[DLM_MAX_NODES];	/* CPG members now */
	unsigned int	lv_ngroup;
	char		lv_wait[160];		/* what recovery waits for */
};
void dlmd_cluster_ls_describe(const struct dlmd *d, const struct dlmd_ls *dl,
			      struct dlmd_ls_view *v);
bool dlmd_cluster_quorate(const struct dlmd *d);
/* Are we a member of the daemon group (our join was delivered)? */
bool dlmd_cluster_in_daemon_group(const struct dlmd *d);
/* Is our view of the fencing turns complete: a sync has ended since we
 * joined, and, for a failure we 'learned' from a record, none runs? */
bool dlmd_cluster_may_claim(const struct dlmd *d, bool learned);
/* The node ids of the daemon group now (ours too): up to max. */
unsigned int dlmd_cluster_daemon_members(const struct dlmd *d, uint32_t *ids,
					 unsigned int max);

/* Does the current quorum view list the node? */
bool dlmd_cluster_quorum_has(const struct dlmd *d, uint32_t nodeid);
const char *dlmd_cluster_source_str(const struct dlmd *d);
/* Node list known from the membership source: fills up to max ids. */
unsigned int dlmd_cluster_nodes(const struct dlmd *d, uint32_t *ids, unsigned int max);
/* A node's address from the membership source ("" if unknown). */
const char *dlmd_cluster_node_addr(const struct dlmd *d, uint32_t nodeid);
/* The members our last UNREACH named (UNREACHABLE PEERS): up to max. */
unsigned int dlmd_cluster_unreachable(const struct dlmd *d, uint32_t *ids,
				      unsigned int max);

/* view.c: the configfs-compatible view (dlm.conf configfs_dir).  init
 * never fails for a refusal (a kernel DLM, another dlmd) or a write
 * error: it logs and dlmd goes on without it.  0 or -ENOMEM. */
int dlmd_view_init(struct dlmd *d);
void dlmd_view_fini(struct dlmd *d);
/* The quorum's node view changed: rewrite comms/. */
void dlmd_view_nodes_changed(struct dlmd *d);
/* A lockspace started with new members (or runs from its creation, with
 * membership none): rewrite spaces/<ls>/. */
void dlmd_view_ls_changed(struct dlmd *d, const struct dlmd_ls *dl);
/* The lockspace goes away: remove spaces/<ls>/. */
void dlmd_view_ls_removed(struct dlmd *d, const struct dlmd_ls *dl);
/* Each tick: write the view again if a write failed (a full file
 * system), until it is up to date. */
void dlmd_view_tick(struct dlmd *d);
/* "on", "off (why)", "refused (why)": for dlmctl status. */
const char *dlmd_view_state(const struct dlmd *d);
/* Is the kernel DLM loaded: is 'configfs' a configfs with dlm/ in it?
 * If so 'why' says it in words. */
bool dlmd_view_kernel_dlm(const char *configfs, char *why, size_t size);

/* comms.c */
struct sockaddr_storage;
/* What comms.c reports up (cluster.c fills it). */
struct dlmd_comms_up {
	/* engine messages were delivered: deliver the engine's output
	 * (dlmd_flush) */
	void	(*cu_flush)(struct dlmd *d);
	/* frames from the node were lost (dlmd_cluster_frames_lost) */
	void	(*cu_frames_lost)(struct dlmd *d, uint32_t nodeid);
	/* a message from the node not taken and with no record to hold it
	 * by (cannot happen: comms.c makes one for every node it adds):
	 * dlmd stops (dlmd_cannot_hold) */
	void	(*cu_cannot_hold)(struct dlmd *d, const char *what, uint32_t arg);
};
int dlmd_comms_init(struct dlmd *d, const char *const *our_addrs,
		    unsigned int naddrs, const struct dlmd_comms_up *up);
void dlmd_comms_fini(struct dlmd *d);
/* The CPG seal key, derived from the same read of key_file as lowcomms'
 * keys (zeros with crypto = none), for cluster.c's seal_init() to own
 * (lc_secret_free); NULL once taken or without comms. */
unsigned char *dlmd_comms_take_cpg_key(struct dlmd *d);
int dlmd_comms_addr_parse(const char *text, uint16_t port,
			  struct sockaddr_storage *ss);
int dlmd_comms_node_add(struct dlmd *d, uint32_t nodeid,
			const char *const *addrs, unsigned int naddrs);
/* The node's daemon left: drop its transport state, keep it known. */
void dlmd_comms_node_reset(struct dlmd *d, uint32_t nodeid,
			   const char *const *addrs, unsigned int naddrs);
/* The node left the nodelist and nothing needs its state: it leaves the
 * node table (lowcomms and metrics); an add of its id starts afresh.
 * 0, or -errno: not removed (-EBUSY inside a lowcomms callback). */
int dlmd_comms_node_remove(struct dlmd *d, uint32_t nodeid);
/* How long (ms) the oldest message queued for the node has waited with
 * nothing acknowledged (lowcomms' lc_node_wait_ms); 0: nothing queued. */
uint64_t dlmd_comms_wait_ms(const struct dlmd *d, uint32_t nodeid);
/* Queue an engine message for node 'to': 0 (taken, or dropped, counted,
 * for a node not in the table), or -ENOMEM: not taken, nothing lost:
 * the caller keeps it and tries again, in order. */
int dlmd_comms_send(struct dlmd *d, uint32_t to, const void *buf, size_t len);
/* Write what was queued now (end of dlmd_flush). */
void dlmd_comms_kick(struct dlmd *d);
void dlmd_comms_status(const struct dlmd *d, char *buf, size_t size);
/* Session-key allocations that found OpenSSL's secure heap full and went
 * to ordinary memory (lowcomms/secret.c; the process's, 0 without key). */
uint64_t dlmd_comms_keys_out_of_secure_heap(void);
/* Offer the messages the engine did not take again now (the engine's
 * tick; comms.c, HOLD). */
void dlmd_comms_retry_held(struct dlmd *d);
/* Peers whose message the engine did not take and that are held; the
 * one held longest and since when (ms), if any. */
unsigned int dlmd_comms_held(const struct dlmd *d, uint32_t *nodeid,
			     uint64_t *since_ms);
/* Each known peer's numbers (metrics.h), in no particular order. */
void dlmd_comms_each_peer(const struct dlmd *d,
			  void (*fn)(void *arg, const struct dlmd_peer_metrics *pm),
			  void *arg);

/* fence-policy.c: fence.c's decisions, without I/O (tests/test-fence.c) */
enum dlmd_fence_method {
	DLMD_FENCE_OFF,		/* enable_fencing = 0: fenced at once */
	DLMD_FENCE_PACEMAKER,	/* wait for pacemaker's fencer to report it */
	DLMD_FENCE_COMMAND,	/* run fence_command */
	DLMD_FENCE_MANUAL,	/* wait for dlmctl fence_ack */
};
const char *dlmd_fence_method_str(enum dlmd_fence_method m);
/* Was dlmd built with pacemaker's fencing API? */
bool dlmd_fence_pcmk_built(void);
/* How a failed node is fenced now, from the config and whether we are
 * connected to pacemaker's fencer. */
enum dlmd_fence_method dlmd_fence_choose(const struct dlmd_config *cf,
					 bool fencer_connected);
/*
 * Pacemaker's fencer's history of a node at one moment (the node's
 * failure, or dlmd's request to fence it): the latest successful and
 * failed fencing in it (ns, the fencer's wall clock: completed and
 * completed_nsec), if it was read then (pm_known), and this node's wall
 * clock then (s).  The history's times are compared with each other, not
 * with this node's clock, which may have been stepped since or differ
 * from the fencer's node's: only when the history could not be read is
 * the wall clock all there is.
 */
struct dlmd_fence_pcmk_mark {
	bool		pm_known;
	int64_t		pm_done_ns;	/* 0: none */
	int64_t		pm_failed_ns;	/* 0: none */
	int64_t		pm_wall_s;	/* time(); 0: no such moment */
};
/* Does the latest successful fencing of the history (done; completed at
 * done_s, done_ns) count for the failure marked 'since'?  Only one newer
 * than the latest in the history at the failure; without that history,
 * one completed at or after the failure by this node's clock. */
bool dlmd_fence_pcmk_counts(const struct dlmd_fence_pcmk_mark *since, bool done,
			    int64_t done_s, int64_t done_ns);
/* Did the fencing dlmd asked for ('asked') fail: nothing pending, a
 * failure newer than the history at the request and no newer success
 * (without that history: by this node's clock, a failure at or after
 * the request and no success since)? */
bool dlmd_fence_pcmk_ask_failed(const struct dlmd_fence_pcmk_mark *asked,
				bool pending, int64_t failed_s, int64_t failed_ns,
				int64_t done_s, int64_t done_ns);
/* The one-fencer rule: who may fence one failed node now, as every
 * member of the daemon group derives it from the same ordered stream of
 * FENCE_CLAIM / FENCE_RESULT messages and confchgs (fence-policy.c). */
enum dlmd_fence_status {
	DLMD_FENCE_DONE = 0,		/* the claimer fenced the node */
	DLMD_FENCE_FAILED = 1,		/* its attempt failed: the turn passes */
	DLMD_FENCE_RELEASED = 2,	/* it gives the claim back, no verdict */
};
struct dlmd_fence_turn {
	uint32_t	ft_claimer;	/* whose claim holds; 0: nobody's */
	uint32_t	ft_last_failed;	/* the last claimer whose attempt
					 * failed (0: none since it was fenced) */
};
/* cluster.c: multicast FENCE_CLAIM (claim) or FENCE_RESULT 'st' of node
 * 'nodeid' in the daemon group.  0 or a negative errno. */
int dlmd_cluster_fence_send(struct dlmd *d, bool claim, uint32_t nodeid,
			    enum dlmd_fence_status st);
/* A claim from 'from' is delivered: true if it holds now (accepted, or
 * 'from' held it already); false if another's claim holds. */
bool dlmd_fence_turn_claim(struct dlmd_fence_turn *t, uint32_t from);
/* A result from 'from' is delivered: true if it ends from's claim.  A
 * DONE ends the claim whoever held it. */
bool dlmd_fence_turn_result(struct dlmd_fence_turn *t, uint32_t from,
			    enum dlmd_fence_status st);
/* Daemon 'id' left the group: true if that ends its claim. */
bool dlmd_fence_turn_left(struct dlmd_fence_turn *t, uint32_t id);
/* Our place in the order of candidates to claim: the members (ids, n)
 * but those in 'skip' (failed nodes), ascending, starting after
 * ft_last_failed: 0 claims first.  -1: 'self' is no candidate. */
int dlmd_fence_turn_rank(const struct dlmd_fence_turn *t, const uint32_t *members,
			 unsigned int n, const uint32_t *skip, unsigned int nskip,
			 uint32_t self);

/* member-policy.c: the decision of a change's members and event once
 * every member's START is in (cluster.c; tests/test-member-policy.c) */
enum dlmd_decide_kind {
	DLMD_DECIDE_START,	/* every member starts recovery of dc_event */
	DLMD_DECIDE_LOSERS,	/* dc_losers ran it with an older event: they
				 * drop their instance, nothing starts */
	DLMD_DECIDE_EXHAUSTED,	/* the newest event is UINT32_MAX */
};
struct dlmd_decision {
	enum dlmd_decide_kind	dc_kind;
	uint32_t		dc_newest;	/* newest last event reported */
	uint32_t		dc_event;	/* START: the event, newest + 1 */
	uint32_t		dc_losers[DLM_MAX_NODES];
	unsigned int		dc_nlosers;
};
/* members[i] reported last_events[i] (0: fresh) in its START; n <=
 * DLM_MAX_NODES. */
void dlmd_decide(const uint32_t *members, const uint32_t *last_events,
		 unsigned int n, struct dlmd_decision *dc);
/* How long (ms) a member our frames do not get through to, or whose
 * START we wait for, waits before it is reported unreachable: dlm.conf's
 * peer_unreachable_secs (0: never), but never less than corosync's
 * token + consensus (ms; consensus 0: unknown, corosync's default 1.2 x
 * token), the time corosync itself takes to give up on a silent node: a
 * whole node paused for less than the token (a frozen VM) stays in
 * corosync's membership and must not be removed by dlmd. */
uint64_t dlmd_unreach_limit_ms(uint32_t secs, uint32_t token_ms,
			       uint32_t consensus_ms);
/* The back-off before the 'attempt'th (1, 2, ...) restart of a failed
 * recovery: 1 s doubling to at most 30 s. */
#define DLMD_RESTART_FIRST_MS	1000u
#define DLMD_RESTART_MAX_MS	30000u
uint32_t dlmd_restart_delay_ms(uint32_t attempt);
/* The node whose half wins an even split (cluster.c, SPLIT AND MERGE),
 * of the configured node ids 'ids' (n of them): with auto_tie_breaker
 * on, votequorum's auto_tie_breaker_node 'how' ("lowest", "highest", or
 * a list of ids, read as votequorum reads it, whose first configured
 * one counts; NULL: "lowest"), else (and for a 'how' votequorum does
 * not take, which turns its auto_tie_breaker off) the lowest configured
 * id; 0 without nodes. */
uint32_t dlmd_tiebreak_pick(const uint32_t *ids, unsigned int n, bool atb,
			    const char *how);
/* Does votequorum take 'how' as auto_tie_breaker_node: "lowest",
 * "highest", or a list (its first number is not 0)? */
bool dlmd_tiebreak_valid(const char *how);
/* Does a side of n nodes ('ids') hold a strict majority of nconf
 * configured nodes, or exactly half with the tie-breaker node? */
bool dlmd_majority_side(unsigned int nconf, uint32_t tiebreak,
			const uint32_t *ids, unsigned int n);

/* fence.c */
/* What fence.c asks of the daemon group and the quorum, and reports
 * (cluster.c fills it with its dlmd_cluster_* functions of those names). */
struct dlmd_fence_up {
	bool	(*fu_in_group)(const struct dlmd *d);	/* in_daemon_group */
	bool	(*fu_may_claim)(const struct dlmd *d, bool learned);
	unsigned int (*fu_members)(const struct dlmd *d, uint32_t *ids,
				   unsigned int max);	/* daemon_members */
	bool	(*fu_quorate)(const struct dlmd *d);
	bool	(*fu_quorum_has)(const struct dlmd *d, uint32_t nodeid);
	int	(*fu_send)(struct dlmd *d, bool claim, uint32_t nodeid,
			   enum dlmd_fence_status st);	/* fence_send */
	void	(*fu_changed)(struct dlmd *d);	/* fencing_changed */
};
int dlmd_fence_init(struct dlmd *d, const struct dlmd_fence_up *up);
void dlmd_fence_fini(struct dlmd *d);
/* How a node failed (dlmd_fence_node_failed's 'how', bits): */
#define DLMD_FAIL_NODE		0	/* node-down (CPG): it left the ring */
#define DLMD_FAIL_DAEMON	1	/* its dlmd left the daemon group
					 * with lockspaces, without a clean
					 * leave (proc-down); the node is up */
#define DLMD_FAIL_MAJORITY	2	/* seen from a side that held a strict
					 * majority of the configured nodes */
#define DLMD_FAIL_REMOVED	4	/* we removed it from the cluster (its
					 * messages to us were lost) */
#define DLMD_FAIL_EVEN_LOSER	8	/* seen from the half of an even split
					 * without the tie-breaker node: our
					 * fence command waits
					 * EVEN_SPLIT_FENCE_DELAY_MS first */
#define DLMD_FAIL_RESTARTED	16	/* (for a failure not yet fenced) its
					 * dlmd joined our daemon group afresh
					 * (reason join, not a merge), or
					 * merged back as another process:
					 * the incarnation we lost is gone */
void dlmd_fence_node_failed(struct dlmd *d, uint32_t nodeid, unsigned int how);
/* Its dlmd joined our daemon group (any reason): a new incarnation, as
 * far as fencing goes. */
void dlmd_fence_node_joined(struct dlmd *d, uint32_t nodeid);
bool dlmd_fence_is_done(const struct dlmd *d, uint32_t nodeid);
/* Was the node's latest failure fenced by a method that stops the node
 * (fence_command, pacemaker), not by fence_ack or enable_fencing = 0? */
bool dlmd_fence_killed(const struct dlmd *d, uint32_t nodeid);
/* What fencing of the node waits for, as "node N (METHOD...)", for
 * dlmctl ls. */
void dlmd_fence_describe(const struct dlmd *d, uint32_t nodeid, char *buf,
			 size_t size);
/* How many failed nodes wait to be fenced now (for the metrics). */
unsigned int dlmd_fence_waiting(const struct dlmd *d);
/* Fence commands given up on after SIGKILL that have not ended yet. */
unsigned int dlmd_fence_unreaped(const struct dlmd *d);
/* Closes of passed fds that took a second or more and were signalled to
 * end (client.c "Passed fds"). */
uint64_t dlmd_client_reap_interrupted(void);
/* Is a read of pacemaker's fencer's history in flight (fence.c, THE
 * HISTORY READER; for tests/test-fence-pcmk)? */
bool dlmd_fence_pcmk_reading(const struct dlmd *d);
/* The fencing method and fencer connection, one line, for dlmctl status;
 * with any fence command being terminated or given up on (fence.c). */
void dlmd_fence_status(const struct dlmd *d, char *buf, size_t size);
/* The failure of 'nodeid' came from daemon 'from's record (cluster.c,
 * Recorded failures), not from what we saw. */
void dlmd_fence_node_learned(struct dlmd *d, uint32_t nodeid, unsigned int how,
			     uint32_t from);
/* A sync starts: multicast again the fencing claims we hold, for the
 * daemons that join (they have not seen them). */
void dlmd_fence_resend_claims(struct dlmd *d);
/* The daemon group delivered a FENCE_CLAIM / FENCE_RESULT of nodeid. */
void dlmd_fence_claim_delivered(struct dlmd *d, uint32_t from, uint32_t nodeid);
void dlmd_fence_result_delivered(struct dlmd *d, uint32_t from, uint32_t nodeid,
				 enum dlmd_fence_status st);
/* Node 'id' has no daemon in the group any more. */
void dlmd_fence_member_left(struct dlmd *d, uint32_t id);
/* What a FAILED record must say of the node's pending failure, for
 * cluster.c's FORGIVING A SPLIT (bits; 0 if none is pending): */
#define DLMD_FENCE_MARK_FENCING	1	/* a claim or result for it was
					 * delivered since the failure, or
					 * one of ours is on its way, or a
					 * fencing of it runs here (our
					 * command, or pacemaker's fencer) */
#define DLMD_FENCE_MARK_FIRM	2	/* not a node-down seen from a
					 * minority side (a dlmd failure, a
					 * majority's, an even split's,
					 * removed, restarted) */
unsigned int dlmd_fence_marks(const struct dlmd *d, uint32_t nodeid);
/* What fence.c knows of a pending failure, for dlmd_fence_marks_of()
 * (fence-policy.c: the mapping alone, tests/test-fence.c). */
struct dlmd_fence_pending {
	bool	fp_seen;	/* a claim or result delivered since it */
	bool	fp_claim_sent;	/* our FENCE_CLAIM is on its way */
	bool	fp_running;	/* our fence command runs */
	bool	fp_pcmk_asked;	/* we asked pacemaker's fencer */
	bool	fp_pcmk_pending; /* the fencer has an operation on it */
	bool	fp_claimed;	/* a claim holds, or one was accepted since */
	bool	fp_in_view_ok;	/* DAEMON, MAJORITY, REMOVED or RESTARTED */
	bool	fp_daemon;	/* its dlmd died (DLMD_FAIL_DAEMON) */
	bool	fp_even_loser;	/* DLMD_FAIL_EVEN_LOSER */
};
unsigned int dlmd_fence_marks_of(const struct dlmd_fence_pending *p);
/* Every member agreed (cluster.c, FORGIVING A SPLIT) that nobody acted on
 * the node's pending failure and that it is back as the same process:
 * the failure is dropped unfenced, logged with 'why', counted (status
 * fence_forgiven).  False if none was pending. */
bool dlmd_fence_forgive(struct dlmd *d, uint32_t nodeid, const char *why);
/* Quorum changed: start the fencing that waited for it. */
void dlmd_fence_kick(struct dlmd *d);
/* An operator says the node is fenced.  0, -ENOENT if none pending, or
 * -EBUSY if the node is a member of the current view (alive); 'why'
 * says it in words. */
int dlmd_fence_ack(struct dlmd *d, uint32_t nodeid, char *why, size_t size);

/* client.c: the first recovery of a created lockspace finished (0) or the
 * lockspace went away (negative errno): answer the held LS_CREATEs. */
void dlmd_ls_join_done(struct dlmd *d, struct dlmd_ls *dl, int status);

#endif /* DLMD_PLUGIN_DLMD_H */
