/* bench/moe_shapes.c: what the GEMM predictor gives a MoE expert's two GEMMs
 * sharded over 8 GPUs (TP 8: 8 slivers of 1/8 the width) against the whole
 * expert (EP 8), at a few token counts, without the kernel floor (as
 * hwmodels/gpu_moe.c sums them), and the share of that the activations'
 * traffic alone explains (M K + K N + M N elements against the whole's):
 * docs/VALIDATION.md section 9's Qwen3-235B-A22B comparison.
 * Usage: build/bench/moe_shapes [OPS_PROFILE] [HIDDEN EXPERT_FFN]
 * (default calib/tables/ops-h100.csv, Qwen3-235B-A22B's 4096 and 1536). */
#include <stdio.h>
#include <stdlib.h>
#include "../hwmodels/gemm_predict.h"

static double elems(double m, double k, double n)
{
	return m * k + k * n + m * n;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "calib/tables/ops-h100.csv";
	double h = argc > 3 ? atof(argv[2]) : 4096, w = argc > 3 ? atof(argv[3]) : 1536, s = w / 8;
	char err[512];
	struct op_profile *p;
	struct gemmp *g;
	if (opp_load(path, &p, err, sizeof err) != 0 || gemmp_create(p, NULL, &g, err, sizeof err) != 0) {
		fprintf(stderr, "moe_shapes: %s\n", err);
		return 2;
	}
	printf("tokens | gate-up: 8 slivers, whole (us), traffic ratio | down: 8 slivers, whole (us), traffic ratio\n");
	const double ms[] = { 8, 16, 32, 48, 68, 128 };
	for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
		double m = ms[i];
		double up8 = 8 * gemmp_seconds_unfloored(g, m, h, 2 * s), up = gemmp_seconds_unfloored(g, m, h, 2 * w);
		double dn8 = 8 * gemmp_seconds_unfloored(g, m, s, h), dn = gemmp_seconds_unfloored(g, m, w, h);
		printf("%6.0f | %7.2f %7.2f (x%.2f), traffic x%.2f | %7.2f %7.2f (x%.2f), traffic x%.2f\n", m, up8 * 1e6,
		       up * 1e6, up8 / up, 8 * elems(m, h, 2 * s) / elems(m, h, 2 * w), dn8 * 1e6, dn * 1e6, dn8 / dn,
		       8 * elems(m, s, h) / elems(m, w, h));
	}
	printf("kernel floor %.2f us\n", gemmp_floor_seconds(g) * 1e6);
	gemmp_free(g);
	opp_free(p);
	return 0;
}
