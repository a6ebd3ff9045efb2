// SPDX-License-Identifier: MIT
/*
 * The backend's page work on ranges of several steps (backends/linux/os.c does release, purge
 * and remap moves in 2 MiB steps): every page of a moved range arrives with its contents, the
 * growth reads as zero, the result is one mapping, and release and shrink leave nothing mapped.
 * Sizes are an odd number of steps plus a few pages, so the last, short step is covered.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/config.h"
#include "sefer/os.h"
#include "unit.h"

#define STEP	 ((size_t)2 << 20)
#define OLD_SIZE (5 * STEP + 3 * (size_t)4096)
#define NEW_SIZE (OLD_SIZE + 3 * STEP + 4096)
#define SHRUNK	 (STEP + 4096)

static size_t os_page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static void fill_pages(uint8_t *p, size_t size)
{
	for (size_t off = 0; off < size; off += os_page())
		memset(p + off, (int)(off / os_page() % 251) + 1, 64);
}

/* A reservation of OLD_SIZE with every page filled (fill_pages). */
static uint8_t *filled_reservation(void)
{
	uint8_t *p = sefer_os.reserve(OLD_SIZE, SEGMENT_SIZE, SEFER_NO_NODE);

	ck_assert_ptr_nonnull(p);
	fill_pages(p, OLD_SIZE);
	return p;
}

/* The pages fill_pages wrote at base, now at p + (its offset from base). */
static void check_pages_of(const uint8_t *p, size_t size, size_t base)
{
	for (size_t off = 0; off < size; off += os_page())
		for (size_t i = 0; i < 64; i++)
			ck_assert_msg(p[off + i] == (uint8_t)((base + off) / os_page() % 251 + 1),
				      "page at offset %zu lost its contents", base + off);
}

static void check_pages(const uint8_t *p, size_t size)
{
	check_pages_of(p, size, 0);
}

static void check_zero(const uint8_t *p, size_t size)
{
	for (size_t off = 0; off < size; off += 512)
		ck_assert_msg(p[off] == 0, "byte at offset %zu is 0x%02x, not zero", off, p[off]);
}

/* Nothing of [p, p+size) is mapped: mincore fails with ENOMEM on any unmapped page. */
static void check_unmapped(void *p, size_t size)
{
	unsigned char vec[1];
	size_t page = os_page();

	for (size_t off = 0; off < size; off += page) {
		errno = 0;
		ck_assert_msg(mincore((uint8_t *)p + off, page, vec) == -1 && errno == ENOMEM,
			      "page at offset %zu of %p is still mapped", off, p);
	}
}

/* The mapping that holds p, from /proc/self/maps: its end, or 0. */
static uintptr_t mapping_end(const void *p)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi, end = 0;
	char line[512];

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= (uintptr_t)p &&
		    (uintptr_t)p < hi) {
			end = hi;
			break;
		}
	fclose(f);
	return end;
}

START_TEST(remap_moves_every_step)
{
	uint8_t *old, *moved;
	void *block;

	if (!sefer_os.remap)
		return;
	old = filled_reservation();
	/* Something right after the range: it cannot grow in place, so its pages must move. */
	block = mmap(old + OLD_SIZE, os_page(), PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ck_assert_msg(block == old + OLD_SIZE || errno == EEXIST, "blocking mmap: %s",
		      strerror(errno));
	moved = sefer_os.remap(old, OLD_SIZE, NEW_SIZE, SEGMENT_SIZE);
	ck_assert_ptr_nonnull(moved);
	ck_assert_ptr_ne(moved, old);
	ck_assert_uint_eq((uintptr_t)moved % SEGMENT_SIZE, 0);
	check_pages(moved, OLD_SIZE);
	check_zero(moved + OLD_SIZE, NEW_SIZE - OLD_SIZE);
	check_unmapped(old, OLD_SIZE);
	/* one mapping from start to end (an in-place mremap of it later needs that) */
	ck_assert_uint_eq(mapping_end(moved), (uintptr_t)moved + NEW_SIZE);
	if (block == old + OLD_SIZE)
		munmap(block, os_page());

	/* a shrink keeps the start and gives the rest back */
	ck_assert_ptr_eq(sefer_os.remap(moved, NEW_SIZE, SHRUNK, SEGMENT_SIZE), moved);
	check_pages(moved, SHRUNK);
	check_unmapped(moved + SHRUNK, NEW_SIZE - SHRUNK);
	sefer_os.release(moved, SHRUNK);
	check_unmapped(moved, SHRUNK);
}
END_TEST

/*
 * A step that fails (here: a hole where a step starts, which mremap refuses) moves the steps done
 * back: remap returns NULL and every page is where it was, with its contents.
 */
START_TEST(remap_failed_step_moves_back)
{
	size_t hole = 3 * STEP; /* where a step starts: mremap needs a mapping there */
	uint8_t *old;

	if (!sefer_os.remap)
		return;
	old = filled_reservation();
	ck_assert_int_eq(munmap(old + hole, os_page()), 0);
	ck_assert_ptr_null(sefer_os.remap(old, OLD_SIZE, NEW_SIZE, SEGMENT_SIZE));
	check_pages(old, hole);
	check_pages_of(old + hole + os_page(), OLD_SIZE - hole - os_page(), hole + os_page());
	sefer_os.release(old, OLD_SIZE);
	check_unmapped(old, OLD_SIZE);
}
END_TEST

START_TEST(release_and_purge_every_step)
{
	uint8_t *p = filled_reservation();

	/* an eager purge drops every page: the range reads as zero and stays usable */
	ck_assert(sefer_os.purge(p, OLD_SIZE, true));
	check_zero(p, OLD_SIZE);
	fill_pages(p, OLD_SIZE);
	check_pages(p, OLD_SIZE);
	sefer_os.release(p, OLD_SIZE);
	check_unmapped(p, OLD_SIZE);
}
END_TEST

Suite *os_suite(void)
{
	Suite *s = suite_create("os");
	TCase *tc = tcase_create("steps");

	tcase_add_test(tc, remap_moves_every_step);
	tcase_add_test(tc, release_and_purge_every_step);
	suite_add_tcase(s, tc);
	return s;
}

/* Its own suite: under valgrind, whose mremap crashes on a source that starts in a hole. */
Suite *remap_undo_suite(void)
{
	Suite *s = suite_create("remap_undo");
	TCase *tc = tcase_create("steps");

	tcase_add_test(tc, remap_failed_step_moves_back);
	suite_add_tcase(s, tc);
	return s;
}
