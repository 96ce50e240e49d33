/*
 * bench/bench-compare.c - dlmd beside Redis, PostgreSQL and the
 * unix-socket floor, in one sitting (issue 14).
 *
 *   bench-compare [--secs S] [--warmup S] [--clients N] [--window W]
 *                 [--redis SOCKET] [--pg CONNINFO] [--dat FILE]
 *                 [--only SYSTEM,...] [--workloads W,...] [--prefix P]
 *                 [--raw FILE] [--start-at EPOCH] [--ls-exists 1]
 *                 [--no-table 1]
 *
 * bench/compare is the way to run it: it starts a one-node dlmd
 * (tests/dlm-cluster up 1), a private redis-server and a private
 * PostgreSQL cluster, each on a unix socket in a temporary directory,
 * passes their addresses here (dlmd's through $DLMD_SOCKET), and draws
 * the data file this program writes.  The lockspace "compare" is made
 * by a short-lived child at the start and released by another at the
 * end, so the process that forks the clients never holds a libdlm
 * handle.
 *
 * What a "pair" is, per system (one lock taken and given back):
 *
 *   dlmd        dlm_ls_lock_wait(EX) + dlm_ls_unlock_wait, through libdlm
 *               on a lockspace handle of the client's own
 *               (dlm_open_lockspace per client process).
 *   Redis       SET key token NX PX 30000, then EVALSHA of the usual
 *               compare-and-delete script (delete the key only if it
 *               still holds our token), loaded once per connection with
 *               SCRIPT LOAD.  The token is unique per pair.
 *   PostgreSQL  prepared statements SELECT pg_advisory_lock($1) and
 *               SELECT pg_advisory_unlock($1) (session-level locks on a
 *               bigint key), one backend per client.
 *   floor       two round trips of a 64-byte message over a
 *               SOCK_SEQPACKET socketpair to an echo process: the least
 *               a socket design pays for a lock and an unlock (the
 *               kernel's send, wake-up, receive, both ways, twice).  It
 *               is what the issue's W1 goal is measured against.  In
 *               W2 the floor is N such process pairs at once (what the
 *               kernel's socket path gives with every client busy).
 *
 * The workloads, each a fixed time (--secs, default 3 s) after a warm-up
 * (--warmup, default 0.5 s) in which every client already runs its loop:
 *
 *   W1     1 client process, pairs on its own name.  Pairs/s, and the
 *          p50/p99 latency of one pair (clock read around each pair).
 *          Where a pair's time went (issue 14; perf stat of switches,
 *          migrations and syscalls on dlmd and the client, perf record
 *          of sched_wakeup/sched_switch on all CPUs, each placement
 *          forced with taskset; a loaded machine): per pair the client
 *          made 2 sends + 2 blocking recvs, dlmd 2 epoll_wait, 2
 *          recvmmsg and 2 sends, and each side slept twice: 4 wake-ups
 *          per pair.  On one CPU a wake-up is a synchronous hand-off
 *          (2-3 us; 85-92k pairs/s, p50 8-9 us).  On two CPUs each is an
 *          interrupt to a halted vCPU, 20-30 us here (4.4k pairs/s, p50
 *          94 us), and the scheduler keeps a wakee on its idle previous
 *          CPU, so once apart the two stay apart: the p50 of 110-125 us
 *          dlmd, Redis and PostgreSQL all showed in quiet moments (the
 *          floor's socketpair, mostly on one CPU, p50 6 us, mean 56).
 *          Since dlmd watches a busy client's ring for client_spin_us
 *          and libdlm looks for its answer for DLMD_SPIN_US before
 *          sleeping (plugin/client.c "Watching the rings", libdlm.c
 *          "Waiting for an answer"), a pair wakes nobody: 0.02 wake-ups
 *          per pair; apart 45k pairs/s, p50 4.9 us (the client's 14
 *          syscalls per pair are its looks: recv and sched_yield); on
 *          one CPU 60-104k, p50 6.4-6.7 us, and 131k, p50 5.5-5.7 us
 *          (the floor's 5.2-5.4) once both yield first (the client
 *          before its first recv, dlmd after a round that took
 *          requests).  Both fall back to sleeping for a while when a
 *          yield gave the CPU away for long (another busy process on
 *          that CPU): then a pair costs what it did before.
 *   W2     N client processes (default 16), each on its own name.  Pairs
 *          per second summed over the clients.  Profiled (issue 14, perf
 *          stat and perf record -g, a loaded machine): before dlmd
 *          watched busy rings a pair cost the clients 2.9 syscalls and
 *          1.55 switches and dlmd 3.2 syscalls and 0.5-0.7 switches (each
 *          _wait request found dlmd asleep and went on the socket); with
 *          the watch the requests go into the rings: clients 1.2-1.4
 *          syscalls and 1.0-1.3 switches, dlmd 1.1-1.4 syscalls and 0.5
 *          switches per pair, 63-67k -> 87-110k pairs/s in one sitting,
 *          fairness (fewest/most pairs of a client) 0.4-0.55 -> 0.8-0.97.
 *          Two thirds of the CPU is then the clients' own, nearly half
 *          of it in the context switch of the recv they sleep in
 *          (finish_task_switch, __schedule): 16 processes on 2 CPUs.
 *          And two thirds of dlmd's own time is the wake-up of the
 *          client its answer wakes, inside its send (unix_dgram_sendmsg
 *          -> sock_def_readable -> the wake-up, counted at
 *          _raw_spin_unlock_irqrestore: 21% of all samples; an
 *          interrupt to the other vCPU is a VM exit here).  Beyond
 *          this, W2 needs clients that do not sleep for their answers
 *          (a 50 us look fails with 16 clients queued: they back off)
 *          or fewer wake-ups per answer.
 *          With the answer ring (protocol 7; loaded machine, load average
 *          6-7, bench/results/compare-5.txt): no socket call is left on
 *          the path (dlmd 1.96 futex wakes, 0.16 recvmmsg, 0.19
 *          epoll_wait per pair; clients 1.96 futex waits, 0.16 sends),
 *          but the sleeps stay: 2.2 switches per pair in the clients,
 *          and half of dlmd's samples are being switched out for the
 *          client its wake-up woke.  CPU per pair 13-23 us either way in
 *          that noise (the floor's W2: 9.2-11.8 us); 3x PostgreSQL on 2
 *          CPUs needs ~8.7.
 *          Where a pair's time goes now (issue 14, protocol 7, dlmd
 *          watching the rings; load average 9-13 from other work, 56-60k
 *          pairs/s; perf stat of the syscall tracepoints and switches
 *          over 1.5 s on dlmd and all 16 clients, dlmctl status around
 *          it): per pair dlmd makes 1.99 answer-ring wake-ups
 *          (ring_answer_wakes: nearly every answer finds its client
 *          asleep), 0.17 ring_sleeps, 0.13 epoll_wait, 0.11 recvmmsg and
 *          0.1 sched_yield, and is switched out 0.76 times; the clients
 *          make 1.7-1.8 futex waits, 0.11 kicks (sends) and 1.8-1.9
 *          switches.  perf record -g: 43% of dlmd's samples are its
 *          switch away at the end of the futex call that woke a client
 *          (exit_to_user_mode_loop -> schedule: the woken client
 *          preempts it), 34% the wake-up itself (try_to_wake_up, counted
 *          where interrupts come back on), 4% futex_wake and the key of
 *          the shared page; dlmd's own code about 10%.  71% of a
 *          client's samples are its own sleep (futex_do_wait ->
 *          finish_task_switch), libdlm about 8%.  Counting, in libdlm,
 *          where each wait began: in 60-99% of the waits dlmd had taken
 *          the client's last request on the client's own CPU (a woken
 *          client is placed on its waker's CPU), so a pair is mostly a
 *          ping-pong on one CPU: dlmd writes the answer and wakes the
 *          client, the client preempts dlmd, writes its next request and
 *          sleeps, dlmd goes on; two wake-ups and 2.6 switches a pair,
 *          about 10 of the 14 us (compare-6.txt).  Tried, each against
 *          the build without it in one sitting: a client looking with
 *          plain loads (no yield) for 3-20 us when dlmd was awake on
 *          another CPU (10-37% of such looks saw the answer; W2 equal or
 *          lower, 40-45k where it looked whatever the CPU); a client
 *          yielding to dlmd when both share a CPU (52-55k against
 *          78-95k); dlmd at nice -5, -10, -19 and DLMD_SPIN_US 0, 200,
 *          1000 (no difference beyond the noise); and a watch round
 *          holding its wake-ups until all its answers were written: 7
 *          sittings of 3 s with and without, 77.1k against 74.4k pairs/s
 *          mean (one run without at 28.7k left out), higher in 6 of 7; 4
 *          more at load average 7: 99.5k, 123.9k, 124.6k, 128.1k against
 *          98.2k, 96.1k, 172.5k, 86.6k; but both bench/compare pairs had
 *          it lower: 84.6k against 96.1k (compare-7.txt, -before) and
 *          95.7k against 107.6k (compare-7-2.txt, -before).  Not proven,
 *          so not kept (a held wake-up is one more way for a client to
 *          sleep on an answer that is there).  The
 *          172.5k (one run, no profile of it) says the scheduler can
 *          find a cheaper regime on these 2 CPUs.  3x needs 150k
 *          (Redis) and 198k (PostgreSQL) pairs/s: at 14.1 us of CPU a
 *          pair 2 CPUs allow 141k, and the socket floor's W2 (16 echo
 *          pairs, no lock at all) is 155k at 12.7 us.  Past that takes
 *          clients that do not sleep for their answers, and with 16 of
 *          them on 2 CPUs a client that does not sleep takes the CPU the
 *          answer needs.
 *   W3     N client processes on ONE name.  Pairs/s summed, and fairness
 *          = the fewest pairs any client completed / the most.  Redis has
 *          no waiting: a client retries SET NX at once, without a sleep,
 *          until it succeeds (what a simple client loop does; the retries
 *          are counted and printed).  dlmd and PostgreSQL queue the
 *          waiters.  Not run for the floor (there is no shared name).
 *   async  dlmd only: 1 client, --window (default 1000) requests in
 *          flight with dlm_ls_lock/dlm_ls_unlock and completions run by
 *          dlm_dispatch; each slot takes its lock, gives it back, takes
 *          it again.  Lock operations/s, a lock and an unlock counting one
 *          each.  Where an operation's time went (issue 14, perf record
 *          -g and perf stat of the syscall tracepoints on dlmd and the
 *          client, one sitting, 15.7k-32.8k ops/s): three quarters of
 *          both processes' CPU in the kernel, the engine ~2% of dlmd,
 *          encode/decode under 1%.  Per operation the client made 1 send
 *          and 2 recvs (the unlock's REPLY, each AST read alone, an
 *          empty poll of the request connection before each lock) and
 *          0.55 context switches; dlmd 2.4 sends (the REPLY of every
 *          unlock, one send per AST, retries of a full AST socket whose
 *          ASTs then waited in a malloc'd queue), 0.58 recvmmsg and 0.57
 *          epoll_wait.  The client spent its time blocked on the unlock
 *          REPLY, one round trip per unlock: the window never filled.
 *          After the unlock without REPLY (protocol 4), ASTs read 32 per
 *          recvmmsg and written per wake-up in one sendmmsg, and the
 *          thread id kept: 4.4x (27k-37k -> 115k-159k ops/s, 3 rounds
 *          each, one sitting).  Per operation the client now makes 1
 *          send (one packet per request) and 0.5 recv (the empty look
 *          at the request connection before each lock), dlmd 0.19
 *          recvmmsg, 0.16 sendmmsg and 0.16 epoll_wait; both still
 *          spend about 70% in the kernel, the client mostly in its
 *          send.  What is left to reach 300k is the client's packet
 *          per request (batching sends needs a flush point libdlm does
 *          not have outside dlm_dispatch, or a shared-memory ring).
 *          Profiled again before the ring (issue 14; a loaded machine,
 *          load average 8-10: 38.7k ops/s clean, strace -c -f on both
 *          sides, perf record -g): per operation the client makes 1.0
 *          send, 0.5 recv (every one EAGAIN: the look at the request
 *          connection before each async lock) and 0.03 recvmmsg (ASTs
 *          32 at a time); dlmd 0.57 epoll_wait, 0.57 recvmmsg and 0.57
 *          sendmmsg (1.75 requests per wake-up).  70% of the client's
 *          and 65% of dlmd's samples are in the kernel: the client's
 *          send (10% in the syscall, 9% in the wake-up and schedule of
 *          dlmd it causes), dlmd's sleep and wake-up in epoll_wait
 *          (19%); dlmd's own code (engine included) 20%, libdlm 6%.
 *          W1 per pair: client 2 sends + 2 recvs, dlmd 2 epoll_wait,
 *          2 recvmmsg, 2 sends, two sleeps and wake-ups each side;
 *          72-75% in the kernel.  Nothing cheaper than taking the
 *          send (and dlmd's read) off each request: the request ring.
 *          With the ring (protocol 5), same machine, main's build and
 *          the ring's back to back, 3 rounds, one sitting, load
 *          average 6-9: async 70.7k/53.5k/66.8k -> 84.1k/97.8k/114.7k
 *          ops/s (1.55x mean), and CPU time of dlmd and client
 *          together per operation 8.2 -> 2.15 us (3.8x less; the
 *          throughput on this busy machine is bound by how soon each
 *          side is scheduled, not by CPU).  Per operation the client
 *          now makes 0.036 recvmmsg and almost no send (570 kicks for
 *          306k ring requests), dlmd 0.002 epoll_wait and recvmmsg
 *          and 0.018 sendmmsg (ASTs, 64 a call).  W1 and W2 gain
 *          nothing (11.8k -> 8.4k and 20.8k -> 18.7k pairs/s means,
 *          within this sitting's noise; CPU per pair 48 -> 64 us and
 *          75 -> 88 us, also noisy): a _wait call still sleeps until
 *          its answer, so dlmd sleeps too and each request costs a
 *          kick and a wake-up each way, as the socket did.
 *
 *   fresh  (bench/compare --cluster, not run unless named) like W2, but
 *          every pair on a name never used before: each lock creates its
 *          resource, and on a cluster first asks the name's directory
 *          node who masters it.
 *
 *   child  (bench/scale, not run unless named; dlmd only) like fresh,
 *          but every fresh name is a child: each client first takes NL
 *          on a parent name of its own ("P-parent-ID") and keeps it for
 *          the whole run; every pair then locks a fresh name under that
 *          parent lock (dlm_ls_lock_wait's parent argument).  A child is
 *          mastered with its parent (core/resource.c), and the node that
 *          first locked the parent masters it: so none of these pairs
 *          needs a message to another node, where a fresh root asks its
 *          directory node first unless that node is this one.
 *
 * bench/compare --cluster runs one bench-compare per node (dlm-cluster
 * exec) on the lockspace it joined beforehand (--ls-exists 1), names
 * prefixed per node (--prefix), all starting at one moment (--start-at,
 * CLOCK_REALTIME, which every node namespace shares), and sums their
 * --raw lines; see that script for the remote-master pair and its floor.
 *
 * Where a remote-master pair's time goes (issue 14, "Remote"; 3 nodes on
 * this 2-vCPU VM, bench-compare W1 from node 2 on a name node 1 masters,
 * perf stat of the syscall tracepoints, switches and task-clock on both
 * dlmds and the client for 1.5 s, per pair counted by the master's
 * sendto, exactly 2 a pair; main's optimised build, load average 4-7,
 * 2026-12-07): the master makes 2 epoll_wait, 2 recvfrom, 2 sendto and 2
 * switches a pair (nothing to cut but the wake-ups: 57% of its perf
 * samples are finish_task_switch and the wake-up's irqrestore, dlmd's own
 * code 7%, the cluster key's cipher 3%); the client sleeps on its answer
 * twice (2 futex waits, woken by node 2's 2 futex wakes); but node 2, the
 * requester, made 35-63 epoll_wait calls a pair and spent 57-82 us of CPU
 * a pair (the master 18-26 us, the client 11-13).  libqb sleeps whole
 * milliseconds of a timer rounded down and polls with a zero timeout for
 * the rest (a lone 5 ms libqb timer: 20 epoll_wait(4) and 510
 * epoll_wait(0) in 100 ms), and node 2's delayed-ack timer (lowcomms'
 * 5 ms) is armed nearly always: a fifth of a CPU in epoll_wait(0), on the
 * 2 CPUs the pair's three processes share.  With comms.c's timer a
 * timerfd (plugin/comms.c, comms_rearm): node 2 4.6 epoll_wait and
 * 28-30 us of CPU a pair, and in one sitting (bench/README.md, "Remote
 * pair", 04:00) remote pairs/s 9.7k-11.9k -> 18.4k-20.1k, mean 84-103 ->
 * 50-54 us, p99 1.6 ms -> 0.15-0.18 ms; the p50 30-32 us against a
 * floor of 17 (1.8-2.0x; main's 28 and 62 us, 1.7x and 3.6x).  Watching
 * the peers (comms.c, peer_spin_us: the master reads the unlock after its
 * answer by a poll) read only 2.5k of the master's 29k messages in the
 * window: 6 long yields (this machine's other work) turned the watches
 * off for 16 ms, doubling, most of the time; with it and without it the
 * same beyond the noise (18.4k-20.1k against 18.4k-18.6k).  What
 * is left at p50 is 8 sleeps and wake-ups a pair (the client's 2, node
 * 2's 4, the master's 2: as many as the floor's 8, each dearer here
 * with three processes on 2 vCPUs) plus each daemon's work per message
 * (ring or recv, the engine, seal/open, send): about 13 us a pair
 * beyond the floor.
 *
 * Every client is a process forked from this one; each connects, warms
 * up, reports ready through a pipe, and waits for the parent's "go"
 * message, which carries the measurement window [start, end) on
 * CLOCK_MONOTONIC (one clock for every process).  A client counts the
 * pairs that completed inside the window and sends its count (and its
 * latency percentiles) back through a pipe; rates are counts divided by
 * the window's length.  The parent never opens a libdlm handle, a Redis
 * or PostgreSQL connection itself.
 *
 * The output is a table (rows: systems; columns: workloads), a table of
 * the CPU time per pair (utime+stime from /proc over the window: the
 * server's, with --server-pid SYSTEM=PID, it and all its descendants, so
 * PostgreSQL's backends count; the floor's server is its echo processes;
 * then the clients' own, every thread) and a ratio
 * block with the goals of issue 14, each "met" or "not met"; --dat FILE
 * writes the pairs/s as a gnuplot data file (rows: workloads, columns:
 * systems, "-" where nothing was measured).  On a loaded machine the
 * absolute figures are noisy; the ratios within one sitting are the
 * point.
 */
#include <sys/types.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include "libdlm/libdlm.h"

#define CMP_LS			"compare"
#define DEFAULT_SECS		3.0
#define DEFAULT_WARMUP		0.5
#define DEFAULT_CLIENTS		16
#define MAX_CLIENTS		256
#define DEFAULT_WINDOW		1000
#define MAX_WINDOW		65536
#define PING_LEN		64
#define REDIS_TTL_MS		30000
/* A Redis W3 client gives up spinning this long after the window ends. */
#define SPIN_GRACE_S		5.0
/* Time allowed for connecting and warming up, and for the results after
 * the window ends, before the parent gives up on its clients. */
#define READY_TIMEOUT_S		60.0
#define RESULT_TIMEOUT_S	60.0
/* async: how long the completions of the last requests may take. */
#define DRAIN_TIMEOUT_MS	10000

/* The issue's goals (issue 14), as ratios measured in one sitting. */
#define GOAL_W1_FLOOR		1.1	/* W1 pair time / floor pair time, at most */
#define GOAL_W1_REDIS		2.0	/* W1 dlmd / Redis, stretch, at least */
#define GOAL_W2			3.0	/* W2 dlmd / Redis and / PostgreSQL */
#define GOAL_W3_PG		2.0	/* W3 dlmd / PostgreSQL */
#define GOAL_W3_FAIR		0.9	/* W3 dlmd fairness min/max */
#define GOAL_ASYNC		300000.0 /* async lock operations/s */

/* The Redis compare-and-delete: delete KEYS[1] only if it holds ARGV[1]. */
static const char redis_unlock_lua[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then "
	"return redis.call('del', KEYS[1]) else return 0 end";

enum { SYS_DLMD, SYS_REDIS, SYS_PG, SYS_FLOOR, NSYSTEMS };

struct settings {
	double		st_secs;
	double		st_warmup;
	int		st_clients;
	int		st_window;
	const char	*st_redis;	/* redis-server's unix socket */
	const char	*st_pg;		/* libpq conninfo */
	const char	*st_dat;	/* data file to write, or NULL */
	const char	*st_only;	/* comma-separated systems, or NULL */
	const char	*st_workloads;	/* comma-separated workloads, or NULL */
	const char	*st_prefix;	/* of every name and key */
	const char	*st_raw;	/* one line per measurement, or NULL */
	double		st_start_at;	/* CLOCK_REALTIME: go no sooner */
	bool		st_ls_exists;	/* lockspace made by someone else */
	bool		st_no_table;
	pid_t		st_server_pid[NSYSTEMS]; /* --server-pid, or 0 */
};

/* One client process's connection and its current lock. */
struct client {
	int		cl_id;
	char		cl_name[64];	/* resource name (dlmd) / key (Redis) */
	long long	cl_key;		/* advisory lock key (PostgreSQL) */
	double		cl_give_up;	/* Redis W3: stop spinning after this */
	long		cl_retries;	/* Redis: SET NX refused */
	unsigned long	cl_seq;		/* Redis: makes each token unique */
	const struct settings *cl_st;
	dlm_lshandle_t	cl_ls;
	uint32_t	cl_lkid;
	uint32_t	cl_parent;	/* dlmd child: the parent lock, or 0 */
	redisContext	*cl_redis;
	char		cl_sha[48];	/* the unlock script's SHA1 */
	char		cl_token[64];
	PGconn		*cl_pg;
	int		cl_fd;		/* floor: our end of the socketpair */
	pid_t		cl_echo;	/* floor: the echo process */
};

/* The operations each system offers; 0 or a negative errno. */
struct system {
	const char	*sy_name;	/* --only, data file column */
	const char	*sy_label;	/* table row */
	bool		sy_shared_name;	/* W3 makes sense */
	int		(*sy_connect)(struct client *cl);
	int		(*sy_lock)(struct client *cl);
	int		(*sy_unlock)(struct client *cl);
	void		(*sy_close)(struct client *cl);
};

/* What the parent sends each client once all are ready. */
struct go_msg {
	double		go_start;
	double		go_end;
};

/* What a client sends back (smaller than PIPE_BUF: written atomically). */
struct client_result {
	int		cr_id;
	int		cr_err;		/* 0 or a negative errno */
	long		cr_pairs;	/* completed inside the window */
	long		cr_retries;
	double		cr_p50_us;
	double		cr_p99_us;
	long long	cr_cpu;		/* its utime+stime in the window, ticks */
	long long	cr_echo_cpu;	/* floor: its echo process's, ticks */
	bool		cr_sent;	/* already sent to the parent */
};

/* The pipes of a client process: "ready" to the parent, "go" and
 * "hold" from it, its result to it. */
struct client_fds {
	int		cf_ready;
	int		cf_go;
	int		cf_res;
	int		cf_hold;
};

/* One workload on one system. */
struct wl_result {
	bool		wr_done;
	double		wr_rate;	/* pairs/s summed (async: ops/s) */
	double		wr_p50_us;
	double		wr_p99_us;
	double		wr_fair;	/* fewest / most pairs of a client */
	long		wr_min;		/* the fewest pairs of a client */
	long		wr_max;		/* the most */
	long		wr_retries;
	long long	wr_pairs;	/* completed in the window, all clients */
	long long	wr_cli_cpu;	/* the clients' utime+stime, ticks */
	long long	wr_srv_cpu;	/* the server's (-1: not measured) */
};

/* WFRESH is for bench/compare --cluster: like W2, but every pair on a
 * name never used before (each lock creates the resource, and with
 * several nodes looks its master up in the directory first).  WCHILD is
 * for bench/scale: the same on fresh children of a parent lock the
 * client keeps (dlmd only). */
enum workload { W1, W2, W3, WASYNC, WFRESH, WCHILD, NWORKLOADS };

static const char *const workload_name[NWORKLOADS] = {
	[W1] = "W1", [W2] = "W2", [W3] = "W3", [WASYNC] = "async",
	[WFRESH] = "fresh", [WCHILD] = "child",
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Write or read exactly len bytes; 0 or a negative errno (-EPIPE: EOF). */
static int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- dlmd ---------------------------------------------------------- */

static int dlmd_connect(struct client *cl)
{
	cl->cl_ls = dlm_open_lockspace(CMP_LS);
	return cl->cl_ls ? 0 : -(errno ? errno : EIO);
}

static int dlmd_lock(struct client *cl)
{
	struct dlm_lksb lksb;

	memset(&lksb, 0, sizeof(lksb));
	if (dlm_ls_lock_wait(cl->cl_ls, LKM_EXMODE, &lksb, 0, cl->cl_name,
			     (unsigned int)strlen(cl->cl_name), cl->cl_parent,
			     NULL, NULL, NULL))
		return -(errno ? errno : EIO);
	if (lksb.sb_status)
		return -EPROTO;
	cl->cl_lkid = lksb.sb_lkid;
	return 0;
}

/* child: NL on the client's own parent name, kept until the client ends
 * (dlm_close_lockspace releases it); children are locked under it. */
static int dlmd_lock_parent(struct client *cl)
{
	struct dlm_lksb lksb;
	char name[64];

	snprintf(name, sizeof(name), "%s-parent-%d", cl->cl_st->st_prefix,
		 cl->cl_id);
	memset(&lksb, 0, sizeof(lksb));
	if (dlm_ls_lock_wait(cl->cl_ls, LKM_NLMODE, &lksb, 0, name,
			     (unsigned int)strlen(name), 0, NULL, NULL, NULL))
		return -(errno ? errno : EIO);
	if (lksb.sb_status)
		return -EPROTO;
	cl->cl_parent = lksb.sb_lkid;
	return 0;
}

static int dlmd_unlock(struct client *cl)
{
	struct dlm_lksb lksb;

	memset(&lksb, 0, sizeof(lksb));
	if (dlm_ls_unlock_wait(cl->cl_ls, cl->cl_lkid, 0, &lksb))
		return -(errno ? errno : EIO);
	return 0;
}

static void dlmd_close(struct client *cl)
{
	if (cl->cl_ls)
		dlm_close_lockspace(cl->cl_ls);
	cl->cl_ls = NULL;
}

/* ---- Redis --------------------------------------------------------- */

static int redis_connect(struct client *cl)
{
	redisReply *r;
	int err = 0;

	if (!cl->cl_st->st_redis)
		return -ENOENT;
	cl->cl_redis = redisConnectUnix(cl->cl_st->st_redis);
	if (!cl->cl_redis || cl->cl_redis->err) {
		fprintf(stderr, "bench-compare: redis %s: %s\n", cl->cl_st->st_redis,
			cl->cl_redis ? cl->cl_redis->errstr : "no memory");
		return -ECONNREFUSED;
	}
	r = redisCommand(cl->cl_redis, "SCRIPT LOAD %s", redis_unlock_lua);
	if (!r || r->type != REDIS_REPLY_STRING || r->len >= (long)sizeof(cl->cl_sha))
		err = -EPROTO;
	else
		memcpy(cl->cl_sha, r->str, (size_t)r->len + 1);
	if (r)
		freeReplyObject(r);
	return err;
}

static int redis_lock(struct client *cl)
{
	snprintf(cl->cl_token, sizeof(cl->cl_token), "%ld-%d-%lu", (long)getpid(),
		 cl->cl_id, ++cl->cl_seq);
	for (;;) {
		redisReply *r = redisCommand(cl->cl_redis, "SET %s %s NX PX %d",
					     cl->cl_name, cl->cl_token, REDIS_TTL_MS);
		int type;

		if (!r)
			return -EIO;
		type = r->type;
		freeReplyObject(r);
		if (type == REDIS_REPLY_STATUS)
			return 0;
		if (type != REDIS_REPLY_NIL)
			return -EPROTO;
		/* Held by another client: retry at once (no sleep). */
		cl->cl_retries++;
		if (cl->cl_give_up && now_s() > cl->cl_give_up)
			return -ETIMEDOUT;
	}
}

static int redis_unlock(struct client *cl)
{
	redisReply *r = redisCommand(cl->cl_redis, "EVALSHA %s 1 %s %s", cl->cl_sha,
				     cl->cl_name, cl->cl_token);
	int err = 0;

	if (!r)
		return -EIO;
	/* 1: deleted; 0 would mean the key expired or was taken from us. */
	if (r->type != REDIS_REPLY_INTEGER || r->integer != 1)
		err = -EPROTO;
	freeReplyObject(r);
	return err;
}

static void redis_close(struct client *cl)
{
	if (cl->cl_redis)
		redisFree(cl->cl_redis);
	cl->cl_redis = NULL;
}

/* ---- PostgreSQL ---------------------------------------------------- */

static int pg_prepare(PGconn *pg, const char *name, const char *sql)
{
	PGresult *res = PQprepare(pg, name, sql, 1, NULL);
	int err = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -EPROTO;

	if (err)
		fprintf(stderr, "bench-compare: prepare %s: %s", name,
			PQerrorMessage(pg));
	PQclear(res);
	return err;
}

static int pg_connect(struct client *cl)
{
	int err;

	if (!cl->cl_st->st_pg)
		return -ENOENT;
	cl->cl_pg = PQconnectdb(cl->cl_st->st_pg);
	if (PQstatus(cl->cl_pg) != CONNECTION_OK) {
		fprintf(stderr, "bench-compare: postgresql: %s",
			PQerrorMessage(cl->cl_pg));
		return -ECONNREFUSED;
	}
	err = pg_prepare(cl->cl_pg, "lk", "SELECT pg_advisory_lock($1::bigint)");
	if (!err)
		err = pg_prepare(cl->cl_pg, "ul",
				 "SELECT pg_advisory_unlock($1::bigint)");
	return err;
}

/* Run prepared statement 'stmt' on our key; the single boolean or void
 * value it returns in *val (NULL for void). */
static int pg_exec(struct client *cl, const char *stmt, char *val)
{
	char key[32];
	const char *params[1] = { key };
	PGresult *res;
	int err = 0;

	snprintf(key, sizeof(key), "%lld", cl->cl_key);
	res = PQexecPrepared(cl->cl_pg, stmt, 1, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		err = -EPROTO;
	else if (val)
		*val = PQgetvalue(res, 0, 0)[0];
	PQclear(res);
	return err;
}

static int pg_lock(struct client *cl)
{
	return pg_exec(cl, "lk", NULL);
}

static int pg_unlock(struct client *cl)
{
	char v = 0;
	int err = pg_exec(cl, "ul", &v);

	return err ? err : v == 't' ? 0 : -EPROTO;
}

static void pg_close(struct client *cl)
{
	if (cl->cl_pg)
		PQfinish(cl->cl_pg);
	cl->cl_pg = NULL;
}

/* ---- the floor: a socketpair ping-pong ----------------------------- */

static int floor_connect(struct client *cl)
{
	char buf[PING_LEN];
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		return -errno;
	cl->cl_echo = fork();
	if (cl->cl_echo < 0) {
		int err = -errno;

		close(sv[0]);
		close(sv[1]);
		return err;
	}
	if (cl->cl_echo == 0) {
		ssize_t n;

		close(sv[0]);
		while ((n = recv(sv[1], buf, sizeof(buf), 0)) > 0)
			if (send(sv[1], buf, (size_t)n, 0) != n)
				break;
		_exit(0);
	}
	close(sv[1]);
	cl->cl_fd = sv[0];
	return 0;
}

static int floor_round_trip(struct client *cl)
{
	char buf[PING_LEN];

	memset(buf, 1, sizeof(buf));
	if (send(cl->cl_fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
		return -EIO;
	if (recv(cl->cl_fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
		return -EIO;
	return 0;
}

static void floor_close(struct client *cl)
{
	if (cl->cl_echo > 0) {
		close(cl->cl_fd);
		waitpid(cl->cl_echo, NULL, 0);
	}
	cl->cl_echo = 0;
}

static const struct system systems[NSYSTEMS] = {
	[SYS_DLMD] = { "dlmd", "dlmd", true, dlmd_connect, dlmd_lock,
		       dlmd_unlock, dlmd_close },
	[SYS_REDIS] = { "redis", "Redis", true, redis_connect, redis_lock,
			redis_unlock, redis_close },
	[SYS_PG] = { "postgresql", "PostgreSQL", true, pg_connect, pg_lock,
		     pg_unlock, pg_close },
	[SYS_FLOOR] = { "floor", "floor: 2 unix-socket round trips", false,
			floor_connect, floor_round_trip, floor_round_trip,
			floor_close },
};

/* ---- client processes ---------------------------------------------- */

struct samples {
	uint32_t	*sa_ns;
	size_t		sa_n;
	size_t		sa_cap;
};

static void samples_add(struct samples *sa, double secs)
{
	if (sa->sa_n == sa->sa_cap) {
		size_t cap = sa->sa_cap ? 2 * sa->sa_cap : 65536;
		uint32_t *p = realloc(sa->sa_ns, cap * sizeof(*p));

		if (!p)
			return;	/* percentiles from what we have */
		sa->sa_ns = p;
		sa->sa_cap = cap;
	}
	sa->sa_ns[sa->sa_n++] = secs >= 4.0 ? UINT32_MAX : (uint32_t)(secs * 1e9);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static double samples_pct_us(struct samples *sa, double pct)
{
	size_t i;

	if (!sa->sa_n)
		return 0;
	i = (size_t)(pct / 100.0 * (double)(sa->sa_n - 1) + 0.5);
	return sa->sa_ns[i] / 1e3;
}

/*
 * CPU per pair.  utime+stime (/proc/PID/stat, every thread of the
 * process, in clock ticks) over the measurement window: each client reads
 * its own when the "go" arrives and after its last pair (and, for the
 * floor, its echo process's: the floor's "server"); the parent reads the
 * server's (bench/compare passes its PID: dlmd, redis-server, PostgreSQL's
 * postmaster) together with all its descendants (PostgreSQL's backends
 * and helpers) just before "go" and once every client has sent its
 * result, i.e. finished its last pair.  Until then each client keeps its
 * connection open (it waits for EOF on the "hold" pipe after sending its
 * result): a PostgreSQL backend exits when its client closes, and with it
 * went its CPU of the whole window when the parent, woken late at the
 * window's end on a busy machine, read the tree after some backends had
 * gone (W2: 12 or all 16 of 16 backends missing, 0.0-14 µs a pair where 22
 * was spent; the "1.2-2.3 µs" of compare-6.txt).  A server's work on a
 * closing client is not counted either.  The tree's reading also takes
 * each process's cutime+cstime (its reaped children's), and leaves out
 * the first reading of a process gone since: a descendant that exits and
 * is reaped inside the window is then counted through its parent.
 */
struct proc_stat {
	pid_t		ps_pid;
	pid_t		ps_ppid;
	long long	ps_cpu;		/* utime+stime */
	long long	ps_ccpu;	/* cutime+cstime: reaped children */
};

/* One /proc/PID/stat: 0, or -1 if the process is gone. */
static int proc_stat_read(pid_t pid, struct proc_stat *ps)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	long long cut, cst;
	int ppid;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = (ssize_t)fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* the command name may hold anything: fields start after its ')' */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld",
			 &ppid, &ut, &st, &cut, &cst) != 5)
		return -1;
	ps->ps_pid = pid;
	ps->ps_ppid = (pid_t)ppid;
	ps->ps_cpu = (long long)(ut + st);
	ps->ps_ccpu = cut + cst;
	return 0;
}

static long long proc_cpu(pid_t pid)
{
	struct proc_stat ps;

	return pid > 0 && !proc_stat_read(pid, &ps) ? ps.ps_cpu : 0;
}

/* The processes of a server's tree (its root and all its descendants)
 * with their utime+stime, when last read. */
struct tree_snap {
	struct proc_stat *ts_procs;
	size_t		ts_n;
};

/* Read root's tree into *ts (replacing what it held); -1 if root is gone.
 * The CPU of the window is then tree_delta(): per process, what it used
 * since the first reading (all of it for one that came since), so that a
 * PostgreSQL backend of the last workload ending inside the window takes
 * away nothing but its own last ticks. */
static int tree_read(pid_t root, struct tree_snap *ts)
{
	struct proc_stat *all = NULL;
	size_t n = 0, cap = 0;
	bool *in = NULL, grew;
	size_t kept = 0;
	struct dirent *de;
	DIR *d;

	free(ts->ts_procs);
	ts->ts_procs = NULL;
	ts->ts_n = 0;
	if (root <= 0 || kill(root, 0) < 0)
		return -1;
	d = opendir("/proc");
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		struct proc_stat ps;

		if (!isdigit((unsigned char)de->d_name[0]) ||
		    proc_stat_read((pid_t)atoi(de->d_name), &ps))
			continue;
		if (n == cap) {
			struct proc_stat *na;

			cap = cap ? 2 * cap : 256;
			na = realloc(all, cap * sizeof(*all));
			if (!na)
				break;
			all = na;
		}
		all[n++] = ps;
	}
	closedir(d);
	in = calloc(n ? n : 1, sizeof(*in));
	if (!in) {
		free(all);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		in[i] = all[i].ps_pid == root;
	do {
		grew = false;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < n && !in[i]; j++)
				if (in[j] && all[i].ps_ppid == all[j].ps_pid)
					in[i] = grew = true;
	} while (grew);
	for (size_t i = 0; i < n; i++)
		if (in[i])
			all[kept++] = all[i];
	free(in);
	ts->ts_procs = all;
	ts->ts_n = kept;
	return 0;
}

/* The ticks the tree used from 'a' to 'b' (see tree_read): per process
 * of 'b', its own and its reaped children's since 'a' (all of it for one
 * that came since); less, per process of 'a' gone by 'b', its own of
 * 'a', which its parent's cutime+cstime now holds with the rest of its
 * life. */
static long long tree_delta(const struct tree_snap *a, const struct tree_snap *b)
{
	long long sum = 0;

	for (size_t i = 0; i < b->ts_n; i++) {
		const struct proc_stat *now = &b->ts_procs[i];
		long long before = 0, cbefore = 0;

		for (size_t j = 0; j < a->ts_n; j++)
			if (a->ts_procs[j].ps_pid == now->ps_pid) {
				before = a->ts_procs[j].ps_cpu;
				cbefore = a->ts_procs[j].ps_ccpu;
				break;
			}
		if (now->ps_cpu >= before)
			sum += now->ps_cpu - before;
		if (now->ps_ccpu >= cbefore)
			sum += now->ps_ccpu - cbefore;
	}
	for (size_t j = 0; j < a->ts_n; j++) {
		bool kept = false;

		for (size_t i = 0; i < b->ts_n && !kept; i++)
			kept = b->ts_procs[i].ps_pid == a->ts_procs[j].ps_pid;
		if (!kept)
			sum -= a->ts_procs[j].ps_cpu;
	}
	return sum > 0 ? sum : 0;
}

/* A client's result to the parent, then its wait for EOF on the hold pipe
 * (the parent closes it once it has read the server's CPU): the client's
 * connection, and a PostgreSQL backend with it, lives until then. */
static void client_report(const struct client_fds *cf, struct client_result *cr)
{
	char c;

	cr->cr_sent = true;
	if (write_full(cf->cf_res, cr, sizeof(*cr)))
		return;
	for (;;) {
		ssize_t n = read(cf->cf_hold, &c, 1);

		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
}

/* A client's life: connect, warm up, ready, go, count, report, hold. */

static int client_run(const struct settings *st, const struct system *sy,
		      int id, enum workload w, const struct client_fds *cf,
		      struct client_result *cr)
{
	struct client cl;
	struct samples sa = { 0 };
	struct go_msg go;
	double t0, t1, warm_end;
	char ready = 'r';
	int err;

	memset(&cl, 0, sizeof(cl));
	cl.cl_id = id;
	cl.cl_st = st;
	if (w == W3) {
		snprintf(cl.cl_name, sizeof(cl.cl_name), "%s-one", st->st_prefix);
		cl.cl_key = 1;
	} else {
		snprintf(cl.cl_name, sizeof(cl.cl_name), "%s-own-%d", st->st_prefix, id);
		cl.cl_key = 1000 + id;
	}
	err = sy->sy_connect(&cl);
	if (!err && w == WCHILD)
		err = dlmd_lock_parent(&cl);
	if (err)
		goto out;
	warm_end = now_s() + st->st_warmup;
	cl.cl_give_up = warm_end + SPIN_GRACE_S;
	do {
		err = sy->sy_lock(&cl);
		if (!err)
			err = sy->sy_unlock(&cl);
		if (err)
			goto out;
	} while (now_s() < warm_end);
	err = write_full(cf->cf_ready, &ready, 1);
	if (!err)
		err = read_full(cf->cf_go, &go, sizeof(go));
	if (err)
		goto out;
	cr->cr_cpu = -proc_cpu(getpid());
	cr->cr_echo_cpu = -proc_cpu(cl.cl_echo);
	cl.cl_retries = 0;
	cl.cl_give_up = go.go_end + SPIN_GRACE_S;
	for (unsigned long seq = 0;; seq++) {
		if (w == WFRESH || w == WCHILD) {
			snprintf(cl.cl_name, sizeof(cl.cl_name), "%s-f%d-%lu",
				 st->st_prefix, id, seq);
			cl.cl_key = ((long long)(id + 1) << 32) + (long long)seq;
		}
		t0 = now_s();
		err = sy->sy_lock(&cl);
		if (!err)
			err = sy->sy_unlock(&cl);
		t1 = now_s();
		if (err || t1 >= go.go_end)
			break;
		if (t0 >= go.go_start) {
			cr->cr_pairs++;
			samples_add(&sa, t1 - t0);
		}
	}
	cr->cr_cpu += proc_cpu(getpid());
	cr->cr_echo_cpu += proc_cpu(cl.cl_echo);
	/* Redis W3: a client still spinning when the others have gone. */
	if (err == -ETIMEDOUT)
		err = 0;
	qsort(sa.sa_ns, sa.sa_n, sizeof(*sa.sa_ns), cmp_u32);
	cr->cr_p50_us = samples_pct_us(&sa, 50);
	cr->cr_p99_us = samples_pct_us(&sa, 99);
	cr->cr_retries = cl.cl_retries;
	if (!err)
		client_report(cf, cr);
out:
	if (err)
		fprintf(stderr, "bench-compare: %s client %d: %s\n", sy->sy_name, id,
			strerror(-err));
	free(sa.sa_ns);
	sy->sy_close(&cl);
	return err;
}

/* async (dlmd): a window of slots, each locking and unlocking its own
 * name over and over.  An AST only queues its slot; the loop around
 * dlm_dispatch issues the slot's next request. */
struct async_state;

struct async_slot {
	struct dlm_lksb	sl_lksb;
	char		sl_name[24];
	bool		sl_locked;	/* its last completion was a grant */
	struct async_state *sl_as;
};

struct async_state {
	struct async_slot *as_slots;
	struct async_slot **as_done;	/* completed, not yet handled */
	int		as_ndone;
	int		as_inflight;
	int		as_err;
};

static void async_ast(void *arg)
{
	struct async_slot *sl = arg;

	sl->sl_as->as_done[sl->sl_as->as_ndone++] = sl;
}

/* The slot's next request: an unlock if it holds its lock, else a lock. */
static int async_issue(dlm_lshandle_t ls, struct async_slot *sl)
{
	int rc;

	if (sl->sl_locked)
		rc = dlm_ls_unlock(ls, sl->sl_lksb.sb_lkid, 0, &sl->sl_lksb, sl);
	else
		rc = dlm_ls_lock(ls, LKM_EXMODE, &sl->sl_lksb, 0, sl->sl_name,
				 (unsigned int)strlen(sl->sl_name), 0, async_ast,
				 sl, NULL, NULL);
	if (rc)
		return -(errno ? errno : EIO);
	sl->sl_as->as_inflight++;
	return 0;
}

/* Run the ASTs ready within timeout_ms; 0, -ETIMEDOUT or an error. */
static int async_wait(dlm_lshandle_t ls, int timeout_ms)
{
	struct pollfd pfd = { .fd = dlm_ls_get_fd(ls), .events = POLLIN };
	int n = poll(&pfd, 1, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (n == 0)
		return -ETIMEDOUT;
	dlm_dispatch(pfd.fd);
	return 0;
}

/* Handle the queued completions: count those inside the window, issue
 * the next request while 'more' (and an unlock for every grant). */
static int async_handle(struct async_state *as, dlm_lshandle_t ls,
			const struct go_msg *go, bool more, long *ops)
{
	double t = now_s();
	int err = 0;

	for (int i = 0; i < as->as_ndone && !err; i++) {
		struct async_slot *sl = as->as_done[i];
		int status = sl->sl_lksb.sb_status;

		as->as_inflight--;
		if (sl->sl_locked ? status != EUNLOCK : status != 0) {
			fprintf(stderr, "bench-compare: async %s on %s: status %d\n",
				sl->sl_locked ? "unlock" : "lock", sl->sl_name, status);
			err = -EPROTO;
			break;
		}
		sl->sl_locked = !sl->sl_locked;
		if (t >= go->go_start && t < go->go_end)
			(*ops)++;
		if (more || sl->sl_locked)
			err = async_issue(ls, sl);
	}
	as->as_ndone = 0;
	return err;
}

static int async_run(const struct settings *st, const struct client_fds *cf,
		     struct client_result *cr)
{
	struct async_state as;
	struct go_msg go = { 0, 0 };
	dlm_lshandle_t ls = NULL;
	int window = st->st_window, err = 0;
	long ops = 0;
	char ready = 'r';

	memset(&as, 0, sizeof(as));
	as.as_slots = calloc((size_t)window, sizeof(*as.as_slots));
	as.as_done = calloc((size_t)window, sizeof(*as.as_done));
	if (!as.as_slots || !as.as_done) {
		err = -ENOMEM;
		goto out;
	}
	ls = dlm_open_lockspace(CMP_LS);
	if (!ls) {
		err = -(errno ? errno : EIO);
		goto out;
	}
	for (int i = 0; i < window && !err; i++) {
		struct async_slot *sl = &as.as_slots[i];

		sl->sl_as = &as;
		snprintf(sl->sl_name, sizeof(sl->sl_name), "cmp-async-%d", i);
		err = async_issue(ls, sl);
	}
	/* The warm-up: the same loop, outside any window. */
	for (double warm_end = now_s() + st->st_warmup; !err && now_s() < warm_end;) {
		err = async_wait(ls, DRAIN_TIMEOUT_MS);
		if (!err)
			err = async_handle(&as, ls, &go, true, &ops);
	}
	if (!err)
		err = write_full(cf->cf_ready, &ready, 1);
	if (!err)
		err = read_full(cf->cf_go, &go, sizeof(go));
	ops = 0;
	cr->cr_cpu = -proc_cpu(getpid());
	/* Until the window ends, then until every lock is given back. */
	while (!err && as.as_inflight > 0) {
		err = async_wait(ls, DRAIN_TIMEOUT_MS);
		if (!err)
			err = async_handle(&as, ls, &go, now_s() < go.go_end, &ops);
	}
	cr->cr_cpu += proc_cpu(getpid());
	cr->cr_pairs = ops;
	if (!err)
		client_report(cf, cr);
out:
	if (err)
		fprintf(stderr, "bench-compare: async client: %s (%d in flight)\n",
			strerror(-err), as.as_inflight);
	if (ls)
		dlm_close_lockspace(ls);
	free(as.as_slots);
	free(as.as_done);
	return err;
}

/* Sleep until CLOCK_REALTIME reaches t (seconds since the epoch; 0: no
 * wait).  bench/compare --cluster starts the clients of every node at
 * one moment this way: the nodes' namespaces share the machine's clock. */
static void wait_realtime(double t)
{
	struct timespec ts;

	if (t <= 0)
		return;
	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Wait until fd is readable, at most timeout_s; 0 or -ETIMEDOUT. */
static int wait_readable(int fd, double timeout_s)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int n;

	do
		n = poll(&pfd, 1, (int)(timeout_s * 1000));
	while (n < 0 && errno == EINTR);
	return n > 0 ? 0 : -ETIMEDOUT;
}

/*
 * Run 'nclients' client processes of system sy on workload w (WASYNC:
 * the dlmd async client), and gather their results into wr.  0 or a
 * negative errno; on failure the clients are killed.
 */
static int run_clients(const struct settings *st, const struct system *sy,
		       pid_t server, int nclients, enum workload w,
		       struct wl_result *wr)
{
	struct tree_snap snap0 = { NULL, 0 }, snap1 = { NULL, 0 };
	long long srv = -1;
	bool srv_ok = false;
	int ready_p[2] = { -1, -1 }, go_p[2] = { -1, -1 }, res_p[2] = { -1, -1 };
	int hold_p[2] = { -1, -1 };
	pid_t pids[MAX_CLIENTS];
	struct client_result res[MAX_CLIENTS];
	struct go_msg go;
	long pmin = -1, pmax = 0;
	double total = 0;
	int started = 0, got = 0, err = 0;

	memset(wr, 0, sizeof(*wr));
	if (pipe(ready_p) || pipe(go_p) || pipe(res_p) || pipe(hold_p)) {
		err = -errno;
		goto out;
	}
	fflush(NULL);
	for (; started < nclients; started++) {
		pid_t pid = fork();

		if (pid < 0) {
			err = -errno;
			goto out;
		}
		if (pid == 0) {
			struct client_fds cf = { ready_p[1], go_p[0], res_p[1], hold_p[0] };
			struct client_result cr;
			int rc;

			close(ready_p[0]);
			close(go_p[1]);
			close(res_p[0]);
			close(hold_p[1]);
			memset(&cr, 0, sizeof(cr));
			cr.cr_id = started;
			rc = w == WASYNC ? async_run(st, &cf, &cr)
					 : client_run(st, sy, started, w, &cf, &cr);
			if (cr.cr_sent)
				_exit(rc ? 1 : 0);
			cr.cr_err = rc;
			_exit(write_full(res_p[1], &cr, sizeof(cr)) || rc ? 1 : 0);
		}
		pids[started] = pid;
	}
	close(ready_p[1]);
	close(go_p[0]);
	close(res_p[1]);
	close(hold_p[0]);
	ready_p[1] = go_p[0] = res_p[1] = hold_p[0] = -1;
	/* All connected and warmed up?  A client that failed closes its end
	 * of the ready pipe without writing: EOF before nclients bytes. */
	for (int i = 0; i < nclients && !err; i++) {
		char c;

		err = wait_readable(ready_p[0], READY_TIMEOUT_S);
		if (!err)
			err = read_full(ready_p[0], &c, 1);
	}
	if (err) {
		fprintf(stderr, "bench-compare: %s: %s\n", sy->sy_name,
			err == -EPIPE ? "a client failed to connect or warm up"
				      : "clients not ready in time");
		goto out;
	}
	wait_realtime(st->st_start_at);
	srv_ok = tree_read(server, &snap0) == 0;
	go.go_start = now_s();
	go.go_end = go.go_start + st->st_secs;
	for (int i = 0; i < nclients && !err; i++)
		err = write_full(go_p[1], &go, sizeof(go));
	for (; got < nclients && !err; got++) {
		double left = go.go_end + RESULT_TIMEOUT_S - now_s();

		err = wait_readable(res_p[0], left > 0 ? left : 0);
		if (!err)
			err = read_full(res_p[0], &res[got], sizeof(res[got]));
		if (!err && res[got].cr_err)
			err = res[got].cr_err;
	}
	/* every client is past its last pair and still connected (see
	 * client_report) */
	if (!err && srv_ok && tree_read(server, &snap1) == 0)
		srv = tree_delta(&snap0, &snap1);
	free(snap0.ts_procs);
	free(snap1.ts_procs);
	if (err)
		goto out;
	for (int i = 0; i < nclients; i++) {
		total += (double)res[i].cr_pairs;
		if (pmin < 0 || res[i].cr_pairs < pmin)
			pmin = res[i].cr_pairs;
		if (res[i].cr_pairs > pmax)
			pmax = res[i].cr_pairs;
		wr->wr_retries += res[i].cr_retries;
		wr->wr_cli_cpu += res[i].cr_cpu;
		wr->wr_srv_cpu += res[i].cr_echo_cpu;
	}
	wr->wr_pairs = (long long)total;
	/* the floor's server is its echo processes, the clients' children */
	if (server > 0)
		wr->wr_srv_cpu = srv;
	else if (sy != &systems[SYS_FLOOR])
		wr->wr_srv_cpu = -1;
	wr->wr_done = true;
	wr->wr_min = pmin;
	wr->wr_max = pmax;
	wr->wr_rate = total / st->st_secs;
	wr->wr_fair = pmax ? (double)pmin / (double)pmax : 0;
	wr->wr_p50_us = res[0].cr_p50_us;
	wr->wr_p99_us = res[0].cr_p99_us;
out:
	if (err) {
		if (err != -EPIPE)
			fprintf(stderr, "bench-compare: %s %s: %s\n", sy->sy_name,
				workload_name[w], strerror(-err));
		for (int i = 0; i < started; i++)
			kill(pids[i], SIGKILL);
	}
	for (int i = 0; i < 2; i++) {
		if (ready_p[i] >= 0)
			close(ready_p[i]);
		if (go_p[i] >= 0)
			close(go_p[i]);
		if (res_p[i] >= 0)
			close(res_p[i]);
		if (hold_p[i] >= 0)
			close(hold_p[i]);
	}
	for (int i = 0; i < started; i++)
		waitpid(pids[i], NULL, 0);
	return err;
}

/* ---- the lockspace, made and removed by short-lived children -------- */

static int lockspace_op(bool create)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dlm_lshandle_t ls;

		if (create) {
			ls = dlm_new_lockspace(CMP_LS, 0600, 0);
			if (!ls) {
				fprintf(stderr, "bench-compare: cannot create lockspace "
					CMP_LS ": %s\n", strerror(errno));
				_exit(1);
			}
			_exit(dlm_close_lockspace(ls) ? 1 : 0);
		}
		ls = dlm_open_lockspace(CMP_LS);
		_exit(ls && !dlm_release_lockspace(CMP_LS, ls, 1) ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* ---- output -------------------------------------------------------- */

/* 12345 -> "12.3k", 1234567 -> "1.23M" */
static const char *kfmt(char *buf, size_t len, double v)
{
	if (v >= 1e6)
		snprintf(buf, len, "%.2fM", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else
		snprintf(buf, len, "%.0f", v);
	return buf;
}

static void print_table(const struct settings *st,
			struct wl_result r[NSYSTEMS][NWORKLOADS])
{
	char a[16], cell[NWORKLOADS][64];

	printf("\n| pairs/s (p50, p99 µs) | W1: 1 client, own name | W2: %d clients, own names "
	       "| W3: %d clients, one name (fairness) | async: 1 client, %d in flight |\n",
	       st->st_clients, st->st_clients, st->st_window);
	printf("|---|---|---|---|---|\n");
	for (int s = 0; s < NSYSTEMS; s++) {
		for (int w = 0; w < NWORKLOADS; w++) {
			struct wl_result *x = &r[s][w];

			if (!x->wr_done) {
				snprintf(cell[w], sizeof(cell[w]), "–");
				continue;
			}
			kfmt(a, sizeof(a), x->wr_rate);
			if (w == W1)
				snprintf(cell[w], sizeof(cell[w]), "%s (%.0f, %.0f)", a,
					 x->wr_p50_us, x->wr_p99_us);
			else if (w == W3 && s == SYS_REDIS)
				snprintf(cell[w], sizeof(cell[w]),
					 "%s (%.2f), %.0f retries/pair", a,
					 x->wr_fair, x->wr_rate > 0 ?
					 (double)x->wr_retries / (x->wr_rate * st->st_secs) : 0);
			else if (w == W3)
				snprintf(cell[w], sizeof(cell[w]), "%s (%.2f)", a, x->wr_fair);
			else if (w == WASYNC)
				snprintf(cell[w], sizeof(cell[w]), "%s ops/s", a);
			else
				snprintf(cell[w], sizeof(cell[w]), "%s", a);
		}
		printf("| %s | %s | %s | %s | %s |\n", systems[s].sy_label, cell[W1],
		       cell[W2], cell[W3], cell[WASYNC]);
	}
}

/* µs of CPU per pair (async: per operation) from ticks, into buf. */
static const char *cpu_fmt(char *buf, size_t len, long long ticks, long long pairs)
{
	static long hz;

	if (!hz)
		hz = sysconf(_SC_CLK_TCK);
	if (ticks < 0 || pairs <= 0 || hz <= 0)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%.1f", (double)ticks * 1e6 / (double)hz / (double)pairs);
	return buf;
}

/* The CPU time (utime+stime) per pair, the server's + the clients', and
 * what the two CPUs' budget allows: 2 s of CPU per second / CPU per pair. */
static void print_cpu(struct wl_result r[NSYSTEMS][NWORKLOADS])
{
	char sv[16], cl[16], cell[NWORKLOADS][64];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	printf("\n| CPU µs per pair: server + clients | W1 | W2 | W3 | async (per op) |\n");
	printf("|---|---|---|---|---|\n");
	for (int s = 0; s < NSYSTEMS; s++) {
		bool any = false;

		for (int w = 0; w < NWORKLOADS; w++) {
			struct wl_result *x = &r[s][w];

			if (!x->wr_done) {
				snprintf(cell[w], sizeof(cell[w]), "–");
				continue;
			}
			any = true;
			cpu_fmt(sv, sizeof(sv), x->wr_srv_cpu, x->wr_pairs);
			cpu_fmt(cl, sizeof(cl), x->wr_cli_cpu, x->wr_pairs);
			snprintf(cell[w], sizeof(cell[w]), "%s + %s", sv, cl);
		}
		if (any)
			printf("| %s | %s | %s | %s | %s |\n", systems[s].sy_label,
			       cell[W1], cell[W2], cell[W3], cell[WASYNC]);
	}
	if (ncpu > 0 && r[SYS_DLMD][W2].wr_done && r[SYS_DLMD][W2].wr_srv_cpu >= 0 &&
	    r[SYS_DLMD][W2].wr_pairs > 0) {
		struct wl_result *x = &r[SYS_DLMD][W2];
		double us = (double)(x->wr_srv_cpu + x->wr_cli_cpu) * 1e6 /
			    (double)sysconf(_SC_CLK_TCK) / (double)x->wr_pairs;

		printf("  W2 dlmd: %.1f µs of CPU per pair; %ld CPUs allow at most "
		       "%.0f pairs/s at that cost\n", us, ncpu, (double)ncpu * 1e6 / us);
	}
}

/* One goal line: 'value' against 'goal', met when value <= goal if
 * 'at_most', else value >= goal; "no data" when either side is missing. */
static void goal_line(const char *what, bool have, double value, bool at_most,
		      double goal, const char *unit)
{
	bool met = at_most ? value <= goal : value >= goal;

	if (!have) {
		printf("  %-46s %12s   goal %s %g%s   no data\n", what, "–",
		       at_most ? "≤" : "≥", goal, unit);
		return;
	}
	printf("  %-46s %12.*f%s   goal %s %g%s   %s\n", what,
	       goal >= 1000 ? 0 : 2, value, unit, at_most ? "≤" : "≥", goal, unit,
	       met ? "met" : "not met");
}

static void print_ratios(struct wl_result r[NSYSTEMS][NWORKLOADS])
{
	struct wl_result *d = r[SYS_DLMD], *re = r[SYS_REDIS], *pg = r[SYS_PG],
			 *fl = r[SYS_FLOOR];
	bool w1f = d[W1].wr_done && fl[W1].wr_done && d[W1].wr_rate > 0;
	bool w1r = d[W1].wr_done && re[W1].wr_done && re[W1].wr_rate > 0;
	bool w2r = d[W2].wr_done && re[W2].wr_done && re[W2].wr_rate > 0;
	bool w2p = d[W2].wr_done && pg[W2].wr_done && pg[W2].wr_rate > 0;
	bool w3p = d[W3].wr_done && pg[W3].wr_done && pg[W3].wr_rate > 0;

	printf("\nratios (issue 14's goals, in this sitting):\n");
	goal_line("W1 pair time / floor pair time (mean)", w1f,
		  w1f ? fl[W1].wr_rate / d[W1].wr_rate : 0, true, GOAL_W1_FLOOR, "x");
	if (w1f && fl[W1].wr_p50_us > 0)
		printf("  %-46s %12.2fx   (p50 %.0f µs / %.0f µs)\n",
		       "W1 pair time / floor pair time (p50)",
		       d[W1].wr_p50_us / fl[W1].wr_p50_us, d[W1].wr_p50_us,
		       fl[W1].wr_p50_us);
	goal_line("W1 dlmd / Redis pairs/s (stretch)", w1r,
		  w1r ? d[W1].wr_rate / re[W1].wr_rate : 0, false, GOAL_W1_REDIS, "x");
	goal_line("W2 dlmd / Redis pairs/s", w2r,
		  w2r ? d[W2].wr_rate / re[W2].wr_rate : 0, false, GOAL_W2, "x");
	goal_line("W2 dlmd / PostgreSQL pairs/s", w2p,
		  w2p ? d[W2].wr_rate / pg[W2].wr_rate : 0, false, GOAL_W2, "x");
	goal_line("W3 dlmd / PostgreSQL pairs/s", w3p,
		  w3p ? d[W3].wr_rate / pg[W3].wr_rate : 0, false, GOAL_W3_PG, "x");
	goal_line("W3 dlmd fairness (min/max pairs per client)", d[W3].wr_done,
		  d[W3].wr_fair, false, GOAL_W3_FAIR, "");
	goal_line("async dlmd lock operations/s", d[WASYNC].wr_done,
		  d[WASYNC].wr_rate, false, GOAL_ASYNC, "");
}

/* The data file: one row per workload, one column per system (gnuplot's
 * clustered histogram reads it as is); "-" where nothing was measured. */
static int write_dat(const char *path, const struct settings *st,
		     struct wl_result r[NSYSTEMS][NWORKLOADS])
{
	FILE *f = fopen(path, "w");
	static const char *const label[NWORKLOADS] = {
		[W1] = "W1: 1 client", [W2] = "W2: clients",
		[W3] = "W3: clients on one name", [WASYNC] = "async (ops/s)",
	};

	if (!f)
		return -errno;
	fprintf(f, "# bench-compare: pairs/s (async: lock operations/s), %.1f s each\n",
		st->st_secs);
	fprintf(f, "# workload");
	for (int s = 0; s < NSYSTEMS; s++)
		fprintf(f, " %s", systems[s].sy_name);
	fprintf(f, "\n");
	for (int w = 0; w < NWORKLOADS; w++) {
		if (w == WFRESH || w == WCHILD)	/* the cluster's: not here */
			continue;
		if (w == W2 || w == W3)	/* "W2: 16 clients" */
			fprintf(f, "\"%.4s%d %s\"", label[w], st->st_clients,
				label[w] + 4);
		else
			fprintf(f, "\"%s\"", label[w]);
		for (int s = 0; s < NSYSTEMS; s++) {
			if (r[s][w].wr_done)
				fprintf(f, " %.0f", r[s][w].wr_rate);
			else
				fprintf(f, " -");
		}
		fprintf(f, "\n");
	}
	return fclose(f) ? -errno : 0;
}

/* Is name in the comma-separated list?  A NULL list holds everything. */
static bool in_list(const char *list, const char *name)
{
	size_t len = strlen(name);

	if (!list)
		return true;
	for (const char *p = list; p && *p;) {
		if (!strncmp(p, name, len) && (p[len] == ',' || !p[len]))
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

/* The workloads to run: --workloads, else all but the cluster's fresh
 * and child. */
static bool workload_wanted(const struct settings *st, enum workload w)
{
	if (!st->st_workloads)
		return w != WFRESH && w != WCHILD;
	return in_list(st->st_workloads, workload_name[w]);
}

/* --raw: "SYSTEM WORKLOAD CLIENTS RATE P50_US P99_US MIN MAX RETRIES
 * PAIRS CLIENT_CPU_TICKS SERVER_CPU_TICKS" per measurement (server -1: not
 * measured), for bench/compare --cluster to sum over nodes. */
static int write_raw(const char *path, const struct settings *st,
		     struct wl_result r[NSYSTEMS][NWORKLOADS])
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	for (int s = 0; s < NSYSTEMS; s++)
		for (int w = 0; w < NWORKLOADS; w++) {
			struct wl_result *x = &r[s][w];

			if (!x->wr_done)
				continue;
			fprintf(f, "%s %s %d %.1f %.1f %.1f %ld %ld %ld %lld %lld %lld\n",
				systems[s].sy_name, workload_name[w],
				w == W1 || w == WASYNC ? 1 : st->st_clients, x->wr_rate,
				x->wr_p50_us, x->wr_p99_us, x->wr_min, x->wr_max,
				x->wr_retries, x->wr_pairs, x->wr_cli_cpu, x->wr_srv_cpu);
		}
	return fclose(f) ? -errno : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench-compare [--secs S] [--warmup S] [--clients N] [--window W]\n"
		"                     [--redis SOCKET] [--pg CONNINFO] [--dat FILE]\n"
		"                     [--only dlmd,redis,postgresql,floor]\n"
		"                     [--workloads W1,W2,W3,async,fresh,child] [--prefix P]\n"
		"                     [--raw FILE] [--start-at EPOCH_SECONDS]\n"
		"                     [--ls-exists 1] [--no-table 1]\n"
		"                     [--server-pid dlmd|redis|postgresql=PID]...\n"
		"dlmd is reached through $DLMD_SOCKET; run by bench/compare.\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct wl_result r[NSYSTEMS][NWORKLOADS];
	struct settings st = {
		.st_secs = DEFAULT_SECS, .st_warmup = DEFAULT_WARMUP,
		.st_clients = DEFAULT_CLIENTS, .st_window = DEFAULT_WINDOW,
		.st_prefix = "cmp",
	};
	bool have_ls = false;
	int failed = 0;

	/* Every option takes a value. */
	for (int i = 1; i < argc; i += 2) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		if (!strcmp(argv[i], "--secs"))
			st.st_secs = atof(v);
		else if (!strcmp(argv[i], "--warmup"))
			st.st_warmup = atof(v);
		else if (!strcmp(argv[i], "--clients"))
			st.st_clients = atoi(v);
		else if (!strcmp(argv[i], "--window"))
			st.st_window = atoi(v);
		else if (!strcmp(argv[i], "--redis"))
			st.st_redis = v;
		else if (!strcmp(argv[i], "--pg"))
			st.st_pg = v;
		else if (!strcmp(argv[i], "--dat"))
			st.st_dat = v;
		else if (!strcmp(argv[i], "--only"))
			st.st_only = v;
		else if (!strcmp(argv[i], "--workloads"))
			st.st_workloads = v;
		else if (!strcmp(argv[i], "--prefix"))
			st.st_prefix = v;
		else if (!strcmp(argv[i], "--raw"))
			st.st_raw = v;
		else if (!strcmp(argv[i], "--start-at"))
			st.st_start_at = atof(v);
		else if (!strcmp(argv[i], "--ls-exists"))
			st.st_ls_exists = atoi(v) != 0;
		else if (!strcmp(argv[i], "--no-table"))
			st.st_no_table = atoi(v) != 0;
		else if (!strcmp(argv[i], "--server-pid")) {
			const char *eq = strchr(v, '=');
			int s;

			for (s = 0; eq && s < NSYSTEMS; s++)
				if (strlen(systems[s].sy_name) == (size_t)(eq - v) &&
				    !strncmp(systems[s].sy_name, v, (size_t)(eq - v)))
					break;
			if (!eq || s >= NSYSTEMS || atoi(eq + 1) <= 0)
				usage();
			st.st_server_pid[s] = (pid_t)atoi(eq + 1);
		}
		else
			usage();
	}
	if (st.st_secs <= 0 || st.st_warmup < 0 || st.st_clients < 1 ||
	    st.st_clients > MAX_CLIENTS || st.st_window < 1 ||
	    st.st_window > MAX_WINDOW || strlen(st.st_prefix) > 24)
		usage();
	signal(SIGPIPE, SIG_IGN);
	if (in_list(st.st_only, "dlmd")) {
		if (!getenv("DLMD_SOCKET")) {
			fprintf(stderr, "bench-compare: no DLMD_SOCKET: dlmd not measured\n");
			failed++;
		} else if (!st.st_ls_exists && lockspace_op(true)) {
			failed++;
		} else {
			have_ls = true;
		}
	}
	printf("bench-compare: %.1f s per measurement after %.1f s of warm-up, "
	       "%d clients in W2/W3\n", st.st_secs, st.st_warmup, st.st_clients);
	for (int s = 0; s < NSYSTEMS; s++) {
		const struct system *sy = &systems[s];

		if (!in_list(st.st_only, sy->sy_name) || (s == SYS_DLMD && !have_ls))
			continue;
		if ((s == SYS_REDIS && !st.st_redis) || (s == SYS_PG && !st.st_pg)) {
			fprintf(stderr, "bench-compare: no address for %s: not measured\n",
				sy->sy_name);
			failed++;
			continue;
		}
		for (enum workload w = 0; w < NWORKLOADS; w++) {
			int n = w == W1 || w == WASYNC ? 1 : st.st_clients;

			if (!workload_wanted(&st, w) ||
			    ((w == WASYNC || w == WCHILD) && s != SYS_DLMD) ||
			    (w == W3 && !sy->sy_shared_name))
				continue;
			printf("  %-12s %-6s ...", sy->sy_name, workload_name[w]);
			fflush(stdout);
			if (run_clients(&st, sy, st.st_server_pid[s], n, w, &r[s][w])) {
				printf(" failed\n");
				failed++;
				/* Not even one client worked: the rest would fail too. */
				if (w == W1)
					break;
				continue;
			}
			printf(" %.0f %s/s\n", r[s][w].wr_rate,
			       w == WASYNC ? "ops" : "pairs");
		}
	}
	if (have_ls && !st.st_ls_exists && lockspace_op(false)) {
		fprintf(stderr, "bench-compare: cannot release lockspace " CMP_LS "\n");
		failed++;
	}
	if (!st.st_no_table) {
		print_table(&st, r);
		print_cpu(r);
		print_ratios(r);
	}
	if (st.st_dat) {
		int err = write_dat(st.st_dat, &st, r);

		if (err) {
			fprintf(stderr, "bench-compare: %s: %s\n", st.st_dat, strerror(-err));
			failed++;
		}
	}
	if (st.st_raw) {
		int err = write_raw(st.st_raw, &st, r);

		if (err) {
			fprintf(stderr, "bench-compare: %s: %s\n", st.st_raw, strerror(-err));
			failed++;
		}
	}
	if (failed)
		fprintf(stderr, "bench-compare: %d measurement(s) failed\n", failed);
	return failed ? 1 : 0;
}
