// SPDX-License-Identifier: MIT
/* Slow-path hooks run over every built policy (core/policy.h). */
#include "core/heap.h"
#include "core/policy.h"

static const struct sefer_policy_ops *const policies[] = { POLICY_LIST };

void policy_init_all(void)
{
	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		if (policies[i]->init)
			policies[i]->init();
}

void policy_heap_exit_all(struct heap *h)
{
	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		if (policies[i]->heap_exit)
			policies[i]->heap_exit(h);
}

void policy_collect_all(struct heap *h, bool force)
{
	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		if (policies[i]->collect)
			policies[i]->collect(h, force);
}

void policy_print_stats_all(void)
{
	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		if (policies[i]->print_stats)
			policies[i]->print_stats();
}
