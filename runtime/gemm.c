/* runtime/gemm.c: the packed-weight product of gemm.h: an AVX-512 kernel
 * (intrinsics, compiled for that target only and chosen when the CPU has
 * it) and a portable C kernel of the same shape for every other CPU. */
#include "gemm.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RT_GEMM_HAVE_AVX512 1
#endif

int rt_gemm_pack(uint32_t k, uint32_t n, const float *w, struct rt_packed *out)
{
	memset(out, 0, sizeof *out);
	uint32_t np = (n + RT_GEMM_NB - 1) / RT_GEMM_NB;
	size_t bytes = (size_t)np * k * RT_GEMM_NB * sizeof(float);
	float *d = aligned_alloc(64, bytes ? bytes : 64);
	if (!d)
		return -1;
	for (uint32_t p = 0; p < np; p++) {
		uint32_t c0 = p * RT_GEMM_NB;
		uint32_t cols = n - c0 < RT_GEMM_NB ? n - c0 : RT_GEMM_NB;
		for (uint32_t kk = 0; kk < k; kk++) {
			float *dst = d + ((size_t)p * k + kk) * RT_GEMM_NB;
			memcpy(dst, w + (size_t)kk * n + c0, cols * sizeof(float));
			memset(dst + cols, 0, (RT_GEMM_NB - cols) * sizeof(float));
		}
	}
	*out = (struct rt_packed){ .k = k, .n = n, .npanels = np, .data = d };
	return 0;
}

void rt_gemm_packed_free(struct rt_packed *p)
{
	free(p->data);
	memset(p, 0, sizeof *p);
}

size_t rt_gemm_scratch_floats(uint32_t m, uint32_t k)
{
	return (size_t)(m / RT_GEMM_MR) * RT_GEMM_MR * k + 16;
}

/* x rows [b*MR, b*MR + MR) repacked k-major: xp[kk * MR + r]. */
static void gemm_pack_x(uint32_t k, const float *x, size_t ldx, float *xp)
{
	for (uint32_t kk = 0; kk < k; kk++)
		for (uint32_t r = 0; r < RT_GEMM_MR; r++)
			xp[(size_t)kk * RT_GEMM_MR + r] = x[r * ldx + kk];
}

/* ---- portable C: acc += x * w, never contracted, so the one-row and the
 * block kernel do the same arithmetic per element ---- */

__attribute__((optimize("fp-contract=off")))
static void gemm_block_c(const float *pw, uint32_t kc, const float *xp, int accumulate, float *y, size_t ldy,
                         uint32_t cols)
{
	float acc[RT_GEMM_MR][RT_GEMM_NB];
	for (uint32_t r = 0; r < RT_GEMM_MR; r++)
		for (uint32_t j = 0; j < RT_GEMM_NB; j++)
			acc[r][j] = accumulate && j < cols ? y[r * ldy + j] : 0.0f;
	for (uint32_t kk = 0; kk < kc; kk++) {
		const float *w = pw + (size_t)kk * RT_GEMM_NB;
		for (uint32_t r = 0; r < RT_GEMM_MR; r++) {
			float xv = xp[(size_t)kk * RT_GEMM_MR + r];
			for (uint32_t j = 0; j < RT_GEMM_NB; j++)
				acc[r][j] = acc[r][j] + xv * w[j];
		}
	}
	for (uint32_t r = 0; r < RT_GEMM_MR; r++)
		memcpy(y + r * ldy, acc[r], cols * sizeof(float));
}

__attribute__((optimize("fp-contract=off")))
static void gemm_row_c(const float *pw, uint32_t k, const float *x, float *y, uint32_t cols)
{
	float acc[RT_GEMM_NB] = { 0 };
	for (uint32_t kk = 0; kk < k; kk++) {
		const float *w = pw + (size_t)kk * RT_GEMM_NB;
		float xv = x[kk];
		for (uint32_t j = 0; j < RT_GEMM_NB; j++)
			acc[j] = acc[j] + xv * w[j];
	}
	memcpy(y, acc, cols * sizeof(float));
}

#ifdef RT_GEMM_HAVE_AVX512
/* ---- AVX-512: MR x 4 vectors of accumulators, explicit FMA ---- */

__attribute__((target("avx512f")))
static __mmask16 gemm_mask(uint32_t cols, uint32_t j)
{
	uint32_t lo = 16 * j;
	if (cols >= lo + 16)
		return 0xffff;
	return cols <= lo ? 0 : (__mmask16)((1u << (cols - lo)) - 1);
}

__attribute__((target("avx512f")))
static void gemm_block_avx512(const float *pw, uint32_t kc, const float *xp, int accumulate, float *y,
                              size_t ldy, uint32_t cols)
{
	__m512 c[RT_GEMM_MR][4];
	__mmask16 mk[4];
	for (uint32_t j = 0; j < 4; j++)
		mk[j] = gemm_mask(cols, j);
#pragma GCC unroll 8
	for (uint32_t r = 0; r < RT_GEMM_MR; r++)
#pragma GCC unroll 4
		for (uint32_t j = 0; j < 4; j++)
			c[r][j] = accumulate ? _mm512_maskz_loadu_ps(mk[j], y + r * ldy + 16 * j) : _mm512_setzero_ps();
	for (uint32_t kk = 0; kk < kc; kk++) {
		const float *w = pw + (size_t)kk * RT_GEMM_NB;
		__m512 w0 = _mm512_load_ps(w), w1 = _mm512_load_ps(w + 16);
		__m512 w2 = _mm512_load_ps(w + 32), w3 = _mm512_load_ps(w + 48);
		const float *xk = xp + (size_t)kk * RT_GEMM_MR;
#pragma GCC unroll 8
		for (uint32_t r = 0; r < RT_GEMM_MR; r++) {
			__m512 xv = _mm512_set1_ps(xk[r]);
			c[r][0] = _mm512_fmadd_ps(xv, w0, c[r][0]);
			c[r][1] = _mm512_fmadd_ps(xv, w1, c[r][1]);
			c[r][2] = _mm512_fmadd_ps(xv, w2, c[r][2]);
			c[r][3] = _mm512_fmadd_ps(xv, w3, c[r][3]);
		}
	}
#pragma GCC unroll 8
	for (uint32_t r = 0; r < RT_GEMM_MR; r++)
#pragma GCC unroll 4
		for (uint32_t j = 0; j < 4; j++)
			_mm512_mask_storeu_ps(y + r * ldy + 16 * j, mk[j], c[r][j]);
}

__attribute__((target("avx512f")))
static void gemm_row_avx512(const float *pw, uint32_t k, const float *x, float *y, uint32_t cols)
{
	__m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
	for (uint32_t kk = 0; kk < k; kk++) {
		const float *w = pw + (size_t)kk * RT_GEMM_NB;
		__m512 xv = _mm512_set1_ps(x[kk]);
		c0 = _mm512_fmadd_ps(xv, _mm512_load_ps(w), c0);
		c1 = _mm512_fmadd_ps(xv, _mm512_load_ps(w + 16), c1);
		c2 = _mm512_fmadd_ps(xv, _mm512_load_ps(w + 32), c2);
		c3 = _mm512_fmadd_ps(xv, _mm512_load_ps(w + 48), c3);
	}
	_mm512_mask_storeu_ps(y, gemm_mask(cols, 0), c0);
	_mm512_mask_storeu_ps(y + 16, gemm_mask(cols, 1), c1);
	_mm512_mask_storeu_ps(y + 32, gemm_mask(cols, 2), c2);
	_mm512_mask_storeu_ps(y + 48, gemm_mask(cols, 3), c3);
}
#endif

struct gemm_kernels {
	const char *name;
	void (*block)(const float *pw, uint32_t kc, const float *xp, int accumulate, float *y, size_t ldy,
	              uint32_t cols);
	void (*row)(const float *pw, uint32_t k, const float *x, float *y, uint32_t cols);
};

static const struct gemm_kernels gemm_portable = { "portable", gemm_block_c, gemm_row_c };
#ifdef RT_GEMM_HAVE_AVX512
static const struct gemm_kernels gemm_avx512 = { "avx512", gemm_block_avx512, gemm_row_avx512 };
#endif

static const struct gemm_kernels *gemm_pick(void)
{
#ifdef RT_GEMM_HAVE_AVX512
	if (__builtin_cpu_supports("avx512f"))
		return &gemm_avx512;
#endif
	return &gemm_portable;
}

const char *rt_gemm_isa(void)
{
	return gemm_pick()->name;
}

void rt_gemm_packed(const struct rt_packed *w, uint32_t m, const float *x, size_t ldx, float *y, size_t ldy,
                    float *scratch)
{
	const struct gemm_kernels *kn = gemm_pick();
	uint32_t k = w->k, nblk = m / RT_GEMM_MR;

	for (uint32_t b = 0; b < nblk; b++)
		gemm_pack_x(k, x + (size_t)b * RT_GEMM_MR * ldx, ldx, scratch + (size_t)b * RT_GEMM_MR * k);
	for (uint32_t p = 0; p < w->npanels; p++) {
		const float *pw = w->data + (size_t)p * k * RT_GEMM_NB;
		uint32_t c0 = p * RT_GEMM_NB;
		uint32_t cols = w->n - c0 < RT_GEMM_NB ? w->n - c0 : RT_GEMM_NB;
		for (uint32_t k0 = 0; k0 < k; k0 += RT_GEMM_KC) {
			uint32_t kc = k - k0 < RT_GEMM_KC ? k - k0 : RT_GEMM_KC;
			for (uint32_t b = 0; b < nblk; b++)
				kn->block(pw + (size_t)k0 * RT_GEMM_NB, kc,
				          scratch + (size_t)b * RT_GEMM_MR * k + (size_t)k0 * RT_GEMM_MR, k0 > 0,
				          y + (size_t)b * RT_GEMM_MR * ldy + c0, ldy, cols);
		}
		for (uint32_t i = nblk * RT_GEMM_MR; i < m; i++)
			kn->row(pw, k, x + (size_t)i * ldx, y + (size_t)i * ldy + c0, cols);
	}
}
