// SPDX-License-Identifier: MIT
/*
 * bignum: arbitrary-precision arithmetic where every result is a new block.
 *
 * A small natural-number library (32-bit limbs in one malloc'd block with a
 * length header) in the style of an interpreter's big integers: add, sub,
 * mul, multiply and divide by a word each return a fresh block, and the
 * caller frees the operands it no longer needs. With it each worker
 * repeatedly computes
 *
 *   - pi to D digits by Machin's formula, pi = 16 atan(1/5) - 4 atan(1/239),
 *     each arctangent summed as a fixed-point series over 10^(D+12), and
 *   - e to D digits as the fixed-point sum of 10^(D+12)/k!,
 *
 * where 10^(D+12) is built by square-and-multiply and the result is turned
 * into decimal by repeated division by 10^9, the digit groups collected in
 * an array grown with realloc. D cycles through 20, 40, 60, 80, 100 and
 * 120, so blocks range from 2 to about 15 limbs (8..64 B). Each result
 * is compared with the digits embedded below (computed once, independently,
 * with Python's integers); a mismatch aborts with the first wrong digit.
 *
 * The arithmetic on each block is short (at most 15 limbs), so the time spent
 * in malloc and free is a large share: this measures the length of the
 * allocator's fast paths in a program whose heap is nothing but short-lived
 * temporaries of assorted sizes.
 *
 *   bignum --ops 200 --threads 2 [--pin] [--seed N]
 *
 * --ops is the number of (pi, e) pairs per thread; the seed picks where in
 * the cycle of D each thread starts. Reported ops count every malloc, free
 * and realloc.
 */
#include "common.h"

#define GUARD	12

static const char PI_DIGITS[] =
	"3141592653589793238462643383279502884197169399375105820974944592"
	"3078164062862089986280348253421170679821480865132823066470938446";
static const char E_DIGITS[] =
	"2718281828459045235360287471352662497757247093699959574966967627"
	"7240766303535475945713821785251664274274663919320030599218174135";

static const unsigned digits_cycle[] = { 20, 40, 60, 80, 100, 120 };
#define NCYCLE (sizeof(digits_cycle) / sizeof(digits_cycle[0]))
_Static_assert(sizeof(PI_DIGITS) > 120 && sizeof(E_DIGITS) > 120,
	       "the embedded digits must cover the largest D");

/* Allocator calls made by this thread. */
static __thread uint64_t nops;

struct bn {
	uint32_t n;		/* limbs in use; 0 is zero, no leading zero limbs */
	uint32_t limb[];	/* least significant first */
};

static struct bn *bn_alloc(uint32_t n)
{
	struct bn *a = xmalloc(sizeof(*a) + (size_t)(n ? n : 1) * sizeof(uint32_t));

	nops++;
	a->n = n;
	return a;
}

static void bn_free(struct bn *a)
{
	nops++;
	free(a);
}

static struct bn *bn_trim(struct bn *a)
{
	while (a->n && !a->limb[a->n - 1])
		a->n--;
	return a;
}

static struct bn *bn_small(uint32_t v)
{
	struct bn *a = bn_alloc(1);

	a->limb[0] = v;
	return bn_trim(a);
}

static struct bn *bn_copy(const struct bn *a)
{
	struct bn *r = bn_alloc(a->n);

	memcpy(r->limb, a->limb, (size_t)a->n * sizeof(uint32_t));
	return r;
}

static struct bn *bn_add(const struct bn *a, const struct bn *b)
{
	const struct bn *big = a->n >= b->n ? a : b, *sml = big == a ? b : a;
	struct bn *r = bn_alloc(big->n + 1);
	uint64_t c = 0;
	uint32_t i;

	for (i = 0; i < big->n; i++) {
		c += (uint64_t)big->limb[i] + (i < sml->n ? sml->limb[i] : 0);
		r->limb[i] = (uint32_t)c;
		c >>= 32;
	}
	r->limb[i] = (uint32_t)c;
	return bn_trim(r);
}

/* a - b, a >= b */
static struct bn *bn_sub(const struct bn *a, const struct bn *b)
{
	struct bn *r = bn_alloc(a->n);
	int64_t c = 0;

	for (uint32_t i = 0; i < a->n; i++) {
		c += (int64_t)a->limb[i] - (i < b->n ? b->limb[i] : 0);
		r->limb[i] = (uint32_t)c;
		c >>= 32;	/* arithmetic: 0 or -1 */
	}
	if (c) {
		fprintf(stderr, "bignum: negative difference\n");
		abort();
	}
	return bn_trim(r);
}

static struct bn *bn_mul(const struct bn *a, const struct bn *b)
{
	struct bn *r = bn_alloc(a->n + b->n);

	memset(r->limb, 0, (size_t)r->n * sizeof(uint32_t));
	for (uint32_t i = 0; i < a->n; i++) {
		uint64_t c = 0;
		uint32_t j;

		for (j = 0; j < b->n; j++) {
			c += (uint64_t)a->limb[i] * b->limb[j] + r->limb[i + j];
			r->limb[i + j] = (uint32_t)c;
			c >>= 32;
		}
		r->limb[i + j] = (uint32_t)c;
	}
	return bn_trim(r);
}

static struct bn *bn_mul_small(const struct bn *a, uint32_t m)
{
	struct bn *r = bn_alloc(a->n + 1);
	uint64_t c = 0;
	uint32_t i;

	for (i = 0; i < a->n; i++) {
		c += (uint64_t)a->limb[i] * m;
		r->limb[i] = (uint32_t)c;
		c >>= 32;
	}
	r->limb[i] = (uint32_t)c;
	return bn_trim(r);
}

static struct bn *bn_div_small(const struct bn *a, uint32_t d, uint32_t *rem)
{
	struct bn *q = bn_alloc(a->n);
	uint64_t r = 0;

	for (uint32_t i = a->n; i-- > 0;) {
		r = r << 32 | a->limb[i];
		q->limb[i] = (uint32_t)(r / d);
		r %= d;
	}
	if (rem)
		*rem = (uint32_t)r;
	return bn_trim(q);
}

/* Replace *a by op(*a) and free the old value. */
#define BN_SET(a, expr) do {			\
		struct bn *__new = (expr);	\
		bn_free(a);			\
		(a) = __new;			\
	} while (0)

static struct bn *bn_pow10(unsigned e)
{
	struct bn *r = bn_small(1), *base = bn_small(10);

	for (; e; e >>= 1) {
		if (e & 1)
			BN_SET(r, bn_mul(r, base));
		if (e > 1)
			BN_SET(base, bn_mul(base, base));
	}
	bn_free(base);
	return r;
}

/* scale * atan(1/x), as a truncated series. */
static struct bn *bn_atan_inv(const struct bn *scale, uint32_t x)
{
	struct bn *term = bn_div_small(scale, x, NULL);
	struct bn *sum = bn_copy(term);

	for (uint32_t k = 1; term->n; k++) {
		struct bn *q;

		BN_SET(term, bn_div_small(term, x * x, NULL));
		q = bn_div_small(term, 2 * k + 1, NULL);
		if (k & 1)
			BN_SET(sum, bn_sub(sum, q));
		else
			BN_SET(sum, bn_add(sum, q));
		bn_free(q);
	}
	bn_free(term);
	return sum;
}

/*
 * Decimal digits of a, most significant first, into a new string: groups
 * of nine digits come out least significant first and are collected in an
 * array that grows with realloc, as a string builder would.
 */
static char *bn_to_dec(const struct bn *a)
{
	uint32_t *grp = NULL, cap = 0, n = 0;
	struct bn *t = bn_copy(a);
	char *s, *p;

	while (t->n) {
		uint32_t r;

		if (n == cap) {
			cap = cap ? cap + cap / 2 : 4;
			grp = realloc(grp, cap * sizeof(*grp));
			if (!grp) {
				fprintf(stderr, "bignum: out of memory\n");
				exit(1);
			}
			nops++;
		}
		BN_SET(t, bn_div_small(t, 1000000000u, &r));
		grp[n++] = r;
	}
	bn_free(t);
	s = p = xmalloc((size_t)n * 9 + 2);
	nops++;
	if (!n)
		*p++ = '0';
	for (uint32_t i = n; i-- > 0;)
		p += sprintf(p, i == n - 1 ? "%u" : "%09u", grp[i]);
	*p = 0;
	free(grp);
	nops++;
	return s;
}

static void verify(const char *what, unsigned digits, const char *got,
		   const char *want)
{
	for (unsigned i = 0; i < digits; i++) {
		if (got[i] != want[i]) {
			fprintf(stderr,
				"bignum: %s to %u digits is wrong at digit %u: got "
				"'%.20s', want '%.20s'\n", what, digits, i, got + i,
				want + i);
			abort();
		}
	}
}

static void compute(unsigned digits)
{
	struct bn *scale = bn_pow10(digits + GUARD);
	struct bn *a5, *a239, *t, *e, *term;
	char *s;

	a5 = bn_atan_inv(scale, 5);
	a239 = bn_atan_inv(scale, 239);
	t = bn_mul_small(a5, 4);
	BN_SET(t, bn_sub(t, a239));
	BN_SET(t, bn_mul_small(t, 4));
	bn_free(a5);
	bn_free(a239);
	s = bn_to_dec(t);
	verify("pi", digits, s, PI_DIGITS);
	free(s);
	nops++;
	bn_free(t);

	e = bn_small(0);
	term = bn_copy(scale);
	for (uint32_t k = 1; term->n; k++) {
		BN_SET(e, bn_add(e, term));
		BN_SET(term, bn_div_small(term, k, NULL));
	}
	bn_free(term);
	s = bn_to_dec(e);
	verify("e", digits, s, E_DIGITS);
	free(s);
	nops++;
	bn_free(e);
	bn_free(scale);
}

static void worker(struct worker *w)
{
	uint64_t n = w->o->ops, i;
	struct rng r;
	uint32_t at;

	rng_init(&r, w->o->seed, (uint64_t)w->idx);
	at = rng_below(&r, NCYCLE);
	nops = 0;
	for (i = 0; i < n; i++) {
		compute(digits_cycle[at]);
		at = (at + 1) % NCYCLE;
		if ((i & 3) == 3 && bench_expired(w))
			break;
	}
	w->ops = nops;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "bignum", .threads = 1, .ops = 200, .seed = 42,
	};
	uint64_t ops;
	double secs;

	bench_parse(&o, argc, argv, NULL);
	secs = bench_run_threads(&o, worker, NULL, &ops);
	bench_report(&o, "pi+e", ops, secs);
	return 0;
}
