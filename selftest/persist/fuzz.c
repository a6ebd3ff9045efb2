// SPDX-License-Identifier: MIT
/*
 * libFuzzer target over operation streams. Each input is read two bytes at a time:
 *   b0 < 200: one model operation (alloc, free, realloc, write) steered by (b0, b1);
 *   b0 < 225: a simulated power cut b1 % 16 I/O calls later, then reopen and check;
 *   b0 < 240: close cleanly, reopen, check every slot;
 *   else:     compact and verify.
 * The allocator is chosen by the first byte. Any disagreement with the model aborts.
 * Store files go to PERSIST_FUZZ_DIR (default /dev/shm, else /tmp).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "persist/internal.h"
#include "model.h"

static void self(void *arg, const struct pm_msg *m)
{
	pm_apply(arg, m);
}

static char path[256];

static struct sefer_pstore *must_open(void)
{
	char err[256];
	struct sefer_popts o = { .errbuf = err, .errlen = sizeof(err) };
	struct sefer_pstore *h;

	if (sefer_pstore_open(path, &o, &h)) {
		fprintf(stderr, "fuzz: reopen refused: %s\n", err);
		abort();
	}
	return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sefer_popts o = { .wal_bytes = 64 << 10 };
	struct sefer_pstore *h;
	struct pmodel m;
	char msg[256];

	if (size < 1)
		return 0;
	if (!path[0]) {
		const char *d = getenv("PERSIST_FUZZ_DIR");

		if (!d)
			d = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(path, sizeof(path), "%s/sefer-fuzz-%d.pst", d, (int)getpid());
	}
	unlink(path);
	if (sefer_pstore_create(path, data[0] % SEFER_PALLOC_KINDS, &o, &h))
		abort();
	pm_init(&m, 16, data[0], 3000);
	for (size_t i = 1; i + 1 < size; i += 2) {
		uint8_t a = data[i], b = data[i + 1];

		if (a < 200) {
			m.rng = m.rng * 31 + ((uint64_t)a << 8 | b);
			if (pm_step(&m, h, self, &m))
				abort();
		} else if (a < 225) {
			struct pio_plan plan = { .seed = b, .crash_sim = true,
						 .crash_at = 1 + b % 16 };

			sefer__pio_set_plan(&plan);
			while (!sefer__pio_crashed())
				pm_step(&m, h, self, &m);
			sefer_pstore_close(h);
			sefer__pio_set_plan(NULL);
			h = must_open();
			if (pm_recover(&m, h, msg, sizeof(msg))) {
				fprintf(stderr, "fuzz: after power cut: %s\n", msg);
				abort();
			}
		} else if (a < 240) {
			if (sefer_pstore_close(h))
				abort();
			h = must_open();
			if (pm_check(&m, h, msg, sizeof(msg))) {
				fprintf(stderr, "fuzz: after reopen: %s\n", msg);
				abort();
			}
		} else {
			struct sefer_pverify v;

			if (sefer_pcompact(h, NULL, NULL) || sefer_pverify(h, &v)) {
				fprintf(stderr, "fuzz: compact/verify: %s\n", v.msg);
				abort();
			}
		}
	}
	if (pm_check(&m, h, msg, sizeof(msg))) {
		fprintf(stderr, "fuzz: final: %s\n", msg);
		abort();
	}
	if (sefer_pstore_close(h))
		abort();
	pm_free(&m);
	unlink(path);
	return 0;
}
