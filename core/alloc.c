/*
 * core/alloc.c - the engine's allocations, and failing them on purpose.
 *
 * Every allocation the engine makes while it runs goes through
 * dlm_malloc(), dlm_calloc() or dlm_realloc() with the engine it is for.
 * In the daemon they are malloc(), calloc() and realloc() and nothing
 * more.  A test may set a hook on one engine (dlm_core_set_alloc_hook(),
 * "tests only" in core.h) that is asked before each of that engine's
 * allocations whether it should fail; a yes makes the wrapper return NULL
 * as malloc() does when a cgroup's MemoryMax is reached.  The engine itself
 * decides nothing: no counter, clock or randomness here.  The simulator
 * answers from its seeded generator (dlm-sim --alloc-faults), a unit test
 * from a countdown ("fail the Nth allocation"), so every run replays.
 *
 * Not wrapped, on purpose: dlm_core_new() (no engine yet; it returns
 * NULL), the hash tables' bucket arrays (htab.c knows no engine; a failed
 * grow keeps the old size, and the first array is made with the
 * lockspace, whose creation fails cleanly) and the debug dump (dump.c: a
 * read-only report whose failure is -ENOMEM to the caller).
 *
 * What an engine does when an allocation fails is decided where the
 * allocation is, and argued in that file's essay (lock.c and recover.c
 * "Out of memory", remaster.c "As built"); in short, no message is ever
 * dropped:
 *   - a local call fails with -ENOMEM and changes nothing (lock.c); what
 *     the grant logic will need later (an LVB's room) is taken at the
 *     call; the conversion-deadlock search needs none for a convert
 *     queue of up to 32 locks, and a longer one without it refuses the
 *     conversion, or fails the recovery step (lock.c);
 *   - a REQUEST, CONVERT, UNLOCK or LOOKUP from another node is answered
 *     -ENOMEM, refused whole, and its operation fails at its node;
 *   - a recovery message or step fails the recovery (recovery_failed());
 *     the glue runs recovery again under a newer event (recover.c);
 *   - a message that must be kept for later (the lockspace does not run,
 *     a re-point record) and cannot be is not taken: dlm_core_receive
 *     returns -ENOMEM having changed nothing, and the transport must
 *     offer it again, in order (core.h);
 *   - what can wait is retried at the next tick: a deadlock watch
 *     (deadlock.c), the lookups of requests held over a recovery
 *     (recover.c).
 */
#include <stdlib.h>

#include "core/core_internal.h"

void dlm_core_set_alloc_hook(struct dlm_core *core, int (*fail)(void *arg),
			     void *arg)
{
	core->core_alloc_fail = fail;
	core->core_alloc_arg = arg;
}

/* Whether the test hook refuses this allocation. */
static bool alloc_refused(const struct dlm_core *core)
{
	return core->core_alloc_fail &&
	       core->core_alloc_fail(core->core_alloc_arg);
}

void *dlm_malloc(struct dlm_core *core, size_t size)
{
	if (alloc_refused(core))
		return NULL;
	return malloc(size);
}

void *dlm_calloc(struct dlm_core *core, size_t n, size_t size)
{
	if (alloc_refused(core))
		return NULL;
	return calloc(n, size);
}

/* As realloc(): on failure p is left as it was. */
void *dlm_realloc(struct dlm_core *core, void *p, size_t size)
{
	if (alloc_refused(core))
		return NULL;
	return realloc(p, size);
}
