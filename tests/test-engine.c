/*
 * tests/test-engine.c - plugin/engine.c's promise that nothing the engine
 * hands it is dropped: a message comms.c cannot take (out of memory) is
 * held and sent later in its order; a message or AST queued while malloc
 * fails goes into the preallocated reserve or headroom; and when even
 * that is used up, dlmd stops (it does not go on with a lost message).
 *
 * engine.c is linked alone: the engine (dlm_core_new captures the
 * callbacks the test then calls as the engine would), comms.c and the
 * client's AST sink are fakes below; malloc and realloc are wrapped
 * (-Wl,--wrap) so that the test can make them fail.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/dlmd.h"

void *__real_malloc(size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_realloc(void *p, size_t n);

static bool fail_alloc;		/* malloc and realloc fail while set */

void *__wrap_malloc(size_t n)
{
	return fail_alloc ? NULL : __real_malloc(n);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fail_alloc ? NULL : __real_realloc(p, n);
}

/* ---- fakes -------------------------------------------------------- */

static const struct dlm_core_ops *ops;
static void *ops_ctx;
static struct dlm_core *fake_core = (struct dlm_core *)&fake_core;

struct dlm_core *dlm_core_new(const struct dlm_core_config *cfg,
			      const struct dlm_core_ops *o, void *ctx)
{
	ops = o;
	ops_ctx = ctx;
	return fake_core;
}

void dlm_core_free(struct dlm_core *core) { }

/* engine.c's test-only allocation hook (AddressSanitizer builds only)
 * installs nothing here: no DLMD_TEST_ALLOC_FAIL_* in this test */
void dlm_core_set_alloc_hook(struct dlm_core *core, int (*fail)(void *arg),
			     void *arg)
{
	(void)core;
	(void)fail;
	(void)arg;
}

#define MAX_TAKEN	64
static unsigned int refuse_left;	/* dlm_core_receive says -ENOMEM */
static unsigned int nreceived;		/* messages given to it */
static unsigned int ntaken;		/* ... and taken, in taken[] */
static char taken[MAX_TAKEN][8];

int dlm_core_receive(struct dlm_core *core, uint32_t from, const void *buf,
		     size_t len)
{
	nreceived++;
	if (refuse_left) {
		refuse_left--;
		return -ENOMEM;
	}
	assert_true(ntaken < MAX_TAKEN && len < sizeof(taken[0]));
	memcpy(taken[ntaken], buf, len);
	taken[ntaken++][len] = '\0';
	return 0;
}

static uint64_t now_ms = 1000;

uint64_t dlmd_now_ms(void)
{
	return now_ms;
}

unsigned int dlmd_comms_held(const struct dlmd *d, uint32_t *nodeid,
			     uint64_t *since_ms)
{
	return 0;
}

char *dlmd_escape(const char *s, char *buf, size_t size)
{
	snprintf(buf, size, "%s", s);
	return buf;
}

#define MAX_SENT	256
static char sent[MAX_SENT][8];	/* what comms.c took, in order */
static unsigned int nsent;
static uint32_t refuse_node;	/* comms.c is out of memory for it */

int dlmd_comms_send(struct dlmd *d, uint32_t to, const void *buf, size_t len)
{
	if (to == refuse_node)
		return -ENOMEM;
	assert_true(nsent < MAX_SENT && len < sizeof(sent[0]));
	memcpy(sent[nsent], buf, len);
	sent[nsent++][len] = '\0';
	return 0;
}

void dlmd_comms_kick(struct dlmd *d) { }

static unsigned int nasts;
static uint32_t ast_lkids[1024];

static void fake_ast(struct dlmd *d, const struct dlmd_pending_ast *pa)
{
	assert_true(nasts < 1024);
	ast_lkids[nasts++] = pa->pa_lkid;
}

static void fake_recovery(struct dlmd *d, struct dlm_ls *ls, uint32_t e) { }
static void fake_failed(struct dlmd *d, struct dlm_ls *ls, uint32_t e, int err) { }

static const struct dlmd_engine_up up = {
	.eu_ast = fake_ast,
	.eu_recovery_done = fake_recovery,
	.eu_recovery_failed = fake_failed,
};

static struct dlmd d;

static int setup(void **state)
{
	memset(&d, 0, sizeof(d));
	d.d_nodeid = 1;
	nsent = nasts = 0;
	refuse_node = 0;
	fail_alloc = false;
	refuse_left = 0;
	nreceived = ntaken = 0;
	assert_int_equal(dlmd_engine_new(&d, &up), 0);
	return 0;
}

static int teardown(void **state)
{
	fail_alloc = false;
	dlmd_engine_free(&d);
	return 0;
}

static void engine_send(uint32_t to, const char *text)
{
	ops->send(ops_ctx, to, text, strlen(text));
}

/* got[from..] holds the NULL-ended list want, in order. */
static void assert_texts(char (*got)[8], unsigned int from,
			 const char *const *want)
{
	for (unsigned int i = 0; want[i]; i++)
		assert_string_equal(got[from + i], want[i]);
}

/* comms.c refuses node 2 (out of memory): its messages wait, in order,
 * and node 3's go on; once comms.c takes them they follow in order. */
static void test_held_in_order(void **state)
{
	refuse_node = 2;
	engine_send(2, "a2");
	engine_send(3, "b3");
	engine_send(2, "c2");
	dlmd_flush(&d);
	assert_int_equal(nsent, 1);
	assert_string_equal(sent[0], "b3");
	engine_send(2, "d2");
	dlmd_flush(&d);
	assert_int_equal(nsent, 1);
	refuse_node = 0;
	engine_send(2, "e2");
	dlmd_flush(&d);
	assert_int_equal(nsent, 5);
	assert_texts(sent, 1, (const char *const[]){ "a2", "c2", "d2", "e2",
						    NULL });
	assert_null(d.d_held);
}

/* malloc fails: messages go into the reserve and are sent; past the
 * reserve dlmd stops instead of losing one. */
static void test_reserve(void **state)
{
	char text[8];
	unsigned int n = 0;

	fail_alloc = true;
	engine_send(2, "r0");
	dlmd_flush(&d);
	assert_int_equal(nsent, 1);
	assert_string_equal(sent[0], "r0");
	assert_false(d.d_cannot_hold);
	/* the reserve came back: as many again, held for a node comms.c
	 * refuses, without a flush */
	refuse_node = 3;
	while (!d.d_cannot_hold && n < 1000) {
		snprintf(text, sizeof(text), "m%u", n++);
		engine_send(3, text);
	}
	assert_true(d.d_cannot_hold);
	assert_int_equal(d.d_exit_code, 1);
	fail_alloc = false;
	refuse_node = 0;
	dlmd_flush(&d);
	/* every message that was accepted went out */
	assert_int_equal(nsent, n);
	assert_string_equal(sent[1], "m0");
}

/* A message for another node goes to comms.c as the engine sends it, with
 * no allocation or copy here: with malloc failing, many more than the
 * reserve go out, in order, before any flush. */
static void test_remote_sent_at_once(void **state)
{
	char text[8];

	fail_alloc = true;
	for (unsigned int i = 0; i < 200; i++) {
		snprintf(text, sizeof(text), "s%u", i);
		engine_send(2 + i % 2, text);
	}
	assert_false(d.d_cannot_hold);
	assert_int_equal(nsent, 200);
	assert_string_equal(sent[0], "s0");
	assert_string_equal(sent[199], "s199");
	assert_null(d.d_held);
	assert_null(d.d_msgs);
}

/* realloc fails: ASTs still queue into the headroom, all delivered;
 * past it dlmd stops. */
static void test_ast_headroom(void **state)
{
	struct dlm_ast ast;
	unsigned int n = 0;

	memset(&ast, 0, sizeof(ast));
	fail_alloc = true;
	while (!d.d_cannot_hold && n < 10000) {
		ast.lkid = ++n;
		ops->ast(ops_ctx, &ast);
	}
	assert_true(d.d_cannot_hold);
	assert_true(n > 1);
	fail_alloc = false;
	dlmd_flush(&d);
	assert_int_equal(nasts, n - 1);
	for (unsigned int i = 0; i < nasts; i++)
		assert_int_equal(ast_lkids[i], i + 1);
}

/* A message to ourselves the engine did not take (-ENOMEM: it must be
 * offered again before any later one) is held, with every later one of
 * ours behind it, and offered again at each flush: dlmd goes on, and the
 * engine gets each one once, in order, when it can take them; messages
 * for other nodes are not held up meanwhile. */
static void test_own_message_not_taken(void **state)
{
	uint32_t node = 0;
	uint64_t since = 0;

	engine_send(1, "a1");
	dlmd_flush(&d);
	assert_int_equal(ntaken, 1);
	refuse_left = 3;
	engine_send(1, "b1");
	engine_send(1, "c1");
	engine_send(2, "x2");
	dlmd_flush(&d);			/* b1 refused once */
	assert_false(d.d_cannot_hold);
	assert_int_equal(d.d_exit_code, 0);
	assert_int_equal(ntaken, 1);	/* c1 did not overtake b1 */
	assert_int_equal(nsent, 1);	/* another node's went out */
	assert_string_equal(sent[0], "x2");
	assert_int_equal(dlmd_held(&d, &node, &since), 2);
	assert_int_equal(node, 1);
	assert_int_equal(since, now_ms);
	engine_send(1, "d1");
	dlmd_flush(&d);			/* refused again */
	assert_int_equal(ntaken, 1);
	dlmd_flush(&d);			/* and again: the last refusal */
	assert_int_equal(ntaken, 1);
	assert_int_equal(d.d_self_not_taken, 3);
	assert_int_equal(dlmd_held(&d, NULL, NULL), 3);
	engine_send(1, "e1");
	dlmd_flush(&d);
	assert_int_equal(ntaken, 5);
	assert_texts(taken, 1, (const char *const[]){ "b1", "c1", "d1", "e1",
						     NULL });
	assert_int_equal(nreceived, 8);	/* 5 taken, 3 refused: no repeat */
	assert_int_equal(dlmd_held(&d, NULL, NULL), 0);
	assert_null(d.d_self_held);
	/* the list is usable again after it emptied */
	refuse_left = 1;
	engine_send(1, "f1");
	dlmd_flush(&d);
	engine_send(1, "g1");
	dlmd_flush(&d);
	assert_int_equal(ntaken, 7);
	assert_texts(taken, 5, (const char *const[]){ "f1", "g1", NULL });
	assert_false(d.d_cannot_hold);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_held_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_sent_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ast_headroom, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_message_not_taken, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
