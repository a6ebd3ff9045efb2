/* SPDX-License-Identifier: MIT */
/*
 * A model of what a store must hold, for the crash, fault, kill-loop and fuzz tests.
 *
 * Slots hold blocks whose contents are a pattern of (slot, version, length). pm_step() runs
 * one random operation and reports it twice through pm_apply(): BEGIN before the first call
 * and ACK after the last one succeeded. After a crash pm_recover() checks the reopened store
 * against the acknowledged state, settles the operation that was in flight (done or not done,
 * never half), frees leaked blocks and leaves the model equal to the store.
 */
#ifndef SEFER_PERSIST_MODEL_H
#define SEFER_PERSIST_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sefer/persist.h>

enum { PM_ALLOC = 1, PM_FREE, PM_REALLOC, PM_WRITE };
enum { PM_BEGIN = 1, PM_ACK };

struct pm_slot {
	uint64_t off;
	uint32_t len, ver;
	bool live;
};

struct pm_msg {
	uint8_t kind, op;
	uint32_t slot;
	uint64_t off;
	uint32_t len, ver;
};

struct pmodel {
	struct pm_slot *slot;
	unsigned n;
	uint64_t rng;
	unsigned max_size;
	bool inflight;
	struct pm_msg fl;		/* the BEGIN of the op in flight */
	struct pm_slot before;		/* its slot before the op */
	uint64_t leaked, settled_done, settled_undone;
};

void pm_init(struct pmodel *m, unsigned nslots, uint64_t seed, unsigned max_size);
void pm_free(struct pmodel *m);
void pm_apply(struct pmodel *m, const struct pm_msg *msg);
/* One random op; report(arg, msg) is called for BEGIN and ACK. Returns the op's error. */
int pm_step(struct pmodel *m, struct sefer_pstore *h,
	    void (*report)(void *, const struct pm_msg *), void *arg);
/* Check a reopened store; 0 or -1 with a message. */
int pm_recover(struct pmodel *m, struct sefer_pstore *h, char *msg, size_t len);
/* Check every live slot reads back (no crash in between). */
int pm_check(struct pmodel *m, struct sefer_pstore *h, char *msg, size_t len);
void pm_fill(uint8_t *buf, uint32_t slot, uint32_t ver, size_t len);

#endif
