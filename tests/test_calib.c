/* tests/test_calib.c: the parts of calib/ that need no BLAS: the kernel
 * set picked from the CPU's flags (cpu_select.c) and the measurement plan
 * with its budget (plan.c), against values worked out by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calib/cpu_bench.h"
#include "kernels/cpu_select.h"
#include "calib/plan.h"

static const char cpuinfo_spr[] =
	"processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\ncpu MHz\t\t: 2100.000\n"
	"flags\t\t: fpu sse sse2 avx fma avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16\n\n"
	"processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu sse avx fma avx2 avx512f\n";

static void test_pick_coretype(void **state)
{
	struct calsel_cpu c;
	char why[128];

	(void)state;
	calsel_parse_cpuinfo(cpuinfo_spr, &c);
	assert_string_equal(c.model_name, "Intel(R) Xeon(R) Processor");
	assert_int_equal(c.online_cpus, 2);
	assert_true(c.mhz == 2100.0);
	assert_string_equal(calsel_pick_coretype(&c, why, sizeof why), "SkylakeX");
	assert_non_null(strstr(why, "avx512f"));

	/* AVX-512 F alone (no BW/VL) is not enough for the SkylakeX kernels */
	calsel_parse_cpuinfo("processor : 0\nflags : avx avx2 fma avx512f avx512cd\n", &c);
	assert_string_equal(calsel_pick_coretype(&c, why, sizeof why), "Haswell");
	/* words, not substrings: avx512_bf16 is not avx512f, avx2x is not avx2 */
	calsel_parse_cpuinfo("processor : 0\nflags : avx avx2x fma avx512_bf16 avx512fx\n", &c);
	assert_int_equal(c.avx512f, 0);
	assert_int_equal(c.avx2, 0);
	assert_string_equal(calsel_pick_coretype(&c, why, sizeof why), "Sandybridge");
	calsel_parse_cpuinfo("processor : 0\nflags : sse sse2\n", &c);
	assert_null(calsel_pick_coretype(&c, why, sizeof why));
}

static struct mdl_node nodes[3];
static struct mdl_model model;

static void add_gemm(struct mdl_node *n, uint64_t m, uint64_t k, uint64_t nn, uint32_t attn)
{
	struct mdl_gemm *g = &n->gemms[n->ngemms++];

	memset(g, 0, sizeof *g);
	g->m_per_sample = m;
	g->k = k;
	g->n = nn;
	g->count = 1;
	g->weight_shared = attn;
}

static void test_plan_shapes_and_budget(void **state)
{
	struct calplan *p;
	char err[256];
	double gflop;

	(void)state;
	memset(&model, 0, sizeof model);
	memset(nodes, 0, sizeof nodes);
	strcpy(model.name, "m");
	model.nodes = nodes;
	model.nnodes = 3;
	strcpy(nodes[0].name, "a");
	strcpy(nodes[1].name, "b");
	strcpy(nodes[2].name, "c");
	add_gemm(&nodes[0], 1, 1000, 1000, 0);   /* 2e6 FLOP per sample */
	add_gemm(&nodes[0], 1, 10, 20, 1);       /* attn */
	add_gemm(&nodes[1], 1, 1000, 1000, 0);   /* same shape: not added twice */
	add_gemm(&nodes[2], 100, 100, 100, 0);   /* 2e6 FLOP per sample, 4e4 + 8e4 bytes */

	assert_int_equal(calplan_create(&p, err, sizeof err), 0);
	assert_int_equal(p->nbatches, 22);
	assert_int_equal(calplan_set_batches(p, "1,2,4,8,16", err, sizeof err), 0);
	assert_int_equal(calplan_add_model(p, &model, err, sizeof err), 0);
	assert_int_equal(calplan_add_elementwise(p, 13312, "cell", err, sizeof err), 0);
	assert_int_equal(p->nshapes, 4);
	assert_string_equal(p->shapes[0].user, "m/a");
	assert_int_equal(p->shapes[1].op, CALTAB_ATTN);

	/* gemm 100x100x100 at batch b: 2e6 b FLOP; bytes 4 (1e4 b + 1e4 + 1e4 b) = 8e4 b + 4e4 */
	assert_true(calplan_flops(&p->shapes[2], 3) == 6e6);
	assert_true(calplan_bytes(&p->shapes[2], 3) == 4.0 * (30000 + 10000 + 30000));
	/* attn 1x10x20: every sample has its own operands: 4 b (10 + 200 + 20) */
	assert_true(calplan_bytes(&p->shapes[1], 2) == 4.0 * 2 * 230);

	/* budget 0.02 GFLOP: batch 8 (1.6e7) fits, 16 (3.2e7) does not, for
	 * both 2e6-FLOP shapes; the attn shape (400 FLOP per sample) fits up to
	 * 16 but the model can use no batch above 8, so it stops there too;
	 * the element-wise kernel belongs to no model and keeps 16. */
	p->max_gflop = 0.02;
	size_t points = calplan_apply_budget(p, &gflop);
	assert_int_equal(p->shapes[0].max_batch, 8);
	assert_int_equal(p->shapes[1].max_batch, 8);
	assert_int_equal(p->shapes[2].max_batch, 8);
	assert_int_equal(p->shapes[3].max_batch, 16);
	assert_int_equal(points, 4 + 4 + 4 + 5);
	/* (1+2+4+8) batches x (2e6 + 400 + 2e6) FLOP */
	assert_true(gflop > 15 * 4.0004e6 / 1e9 * (1 - 1e-12) && gflop < 15 * 4.0004e6 / 1e9 * (1 + 1e-12));

	/* the byte budget 4e5: the 1000 x 1000 weight alone is 4e6 bytes, so
	 * that shape is not measured at all, the model can use no batch, and
	 * none of its shapes is measured; the element-wise kernel (4 * 7/13 *
	 * 13312 = 28672 bytes per sample) stops at 8 (13.9 allowed) */
	p->max_gflop = 1e9;
	p->max_bytes = 4e5;
	assert_int_equal(calplan_apply_budget(p, &gflop), 4);
	assert_int_equal(p->shapes[0].max_batch, 0);
	assert_int_equal(p->shapes[2].max_batch, 0);
	assert_int_equal(p->shapes[3].max_batch, 8);

	assert_int_equal(calplan_set_batches(p, "1,2,2", err, sizeof err), -1);
	assert_non_null(strstr(err, "item 3 '2'"));
	assert_int_equal(calplan_set_batches(p, "1,,3", err, sizeof err), -1);
	assert_int_equal(calplan_set_batches(p, "0", err, sizeof err), -1);
	assert_int_equal(calplan_set_batches(p, "4,x", err, sizeof err), -1);
	assert_non_null(strstr(err, "'x'"));
	calplan_destroy(p);
}

/* A point's number: the median by default, the mean on request (hand-computed). */
static void test_summarize(void **state)
{
	(void)state;
	double samples[] = { 3e-3, 1e-3, 10e-3, 2e-3 };
	struct calbench_result r;

	calbench_summarize(samples, 4, 0, &r);
	assert_true(r.median_s == 2.5e-3 && r.value_s == r.median_s);
	assert_true(fabs(r.mean_s - 4e-3) < 1e-15);
	assert_true(r.min_s == 1e-3 && r.max_s == 10e-3 && r.reps == 4);
	calbench_summarize(samples, 4, 1, &r);
	assert_true(fabs(r.value_s - 4e-3) < 1e-15 && r.median_s == 2.5e-3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick_coretype),
		cmocka_unit_test(test_plan_shapes_and_budget),
		cmocka_unit_test(test_summarize),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
