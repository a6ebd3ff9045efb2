// SPDX-License-Identifier: MIT
/*
 * C++ under sefer (check-cxx, check-install): operator new and delete are sefer's, every form
 * works, and running out of memory calls the std::new_handler and throws a catchable
 * std::bad_alloc (where Debian's mimalloc aborts).
 *
 *   cxx preload | linked | static   where operator new is expected to come from: libsefer.so
 *                                   under LD_PRELOAD, libsefer.so linked, libsefer.a
 * A request no machine here could back (64 TiB, with less RAM + swap under the kernel's
 * default overcommit) throws std::bad_alloc too, as with glibc (never_backed).
 *
 *   cxx delete-bad | delete-align-bad   a sized / aligned delete that lies (reported with
 *                                       CONFIG_HARDENED; check-cxx.sh expects the report)
 *
 * Built without sefer's header. Linked to sefer (-DSEFER_LINKED), it calls sefer_owns; preloaded,
 * the program is linked to nothing of sefer's and looks sefer_owns up at run time.
 */
#include <dlfcn.h>
#include <sys/sysinfo.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

static int failures, checks;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		checks++;                                                                          \
		if (!(cond)) {                                                                     \
			failures++;                                                                \
			std::fprintf(stderr, "cxx: FAIL line %d: %s: ", __LINE__, #cond);          \
			std::fprintf(stderr, __VA_ARGS__);                                         \
			std::fputc('\n', stderr);                                                  \
		}                                                                                  \
	} while (0)

#ifdef SEFER_LINKED
extern "C" bool sefer_owns(const void *p);
#endif
static bool (*owns)(const void *);
static void *volatile sink; /* keeps new/delete pairs from being optimised away */

static const std::size_t huge = (std::size_t)1 << 62;
static int handler_calls;

static void give_up_on_third_call()
{
	if (++handler_calls == 3)
		std::set_new_handler(nullptr);
}

struct out_of_reserve : std::bad_alloc {
	const char *what() const noexcept override
	{
		return "out_of_reserve";
	}
};

static void throwing_handler()
{
	handler_calls++;
	throw out_of_reserve();
}

struct alignas(64) line {
	char c[100];
};
struct alignas(4096) page_sized {
	char c[10];
};
struct alignas((std::size_t)1 << 21) huge_aligned {
	char c[10];
};

static void where_from(const char *mode)
{
	Dl_info di = {};
	void *(*op)(std::size_t) = &::operator new;

	if (!std::strcmp(mode, "static")) {
		/* linked from libsefer.a: the program's own copy, not libstdc++'s */
		CHECK(!dladdr((void *)op, &di) || !std::strstr(di.dli_fname, "libstdc++"),
		      "operator new from %s", di.dli_fname);
		return;
	}
	CHECK(dladdr((void *)op, &di) && std::strstr(di.dli_fname, "libsefer"),
	      "operator new from %s, not libsefer.so", di.dli_fname ? di.dli_fname : "?");
	void (*del)(void *) noexcept = &::operator delete;

	CHECK(dladdr((void *)del, &di) && std::strstr(di.dli_fname, "libsefer"),
	      "operator delete from %s", di.dli_fname ? di.dli_fname : "?");
	std::printf("cxx: operator new and delete from %s\n", di.dli_fname);
}

static void forms()
{
	int *i = new int(7);
	int *a = new int[1000];
	line *l = new line;
	page_sized *pg = new page_sized[3];
	huge_aligned *h = new huge_aligned;
	void *nt = ::operator new(100, std::nothrow);
	void *ant = ::operator new(100, std::align_val_t(256), std::nothrow);
	void *an = ::operator new[](5000, std::align_val_t(1 << 16));

	sink = i;
	for (void *p : {(void *)i, (void *)a, (void *)l, (void *)pg, (void *)h, nt, ant, an})
		CHECK(owns(p), "%p from new is not sefer's", p);
	CHECK((std::uintptr_t)l % 64 == 0 && (std::uintptr_t)pg % 4096 == 0 &&
		      (std::uintptr_t)h % ((std::size_t)1 << 21) == 0,
	      "aligned new");
	CHECK((std::uintptr_t)ant % 256 == 0 && (std::uintptr_t)an % (1 << 16) == 0,
	      "aligned operator new");
	delete i;
	delete[] a;
	delete l;
	delete[] pg;
	delete h;
	::operator delete(nt, std::nothrow);
	::operator delete(ant, std::align_val_t(256), std::nothrow);
	::operator delete[](an, std::align_val_t(1 << 16));

	/* sized and aligned-sized deletes with the sizes new was given: no report (HARDENED) */
	for (std::size_t n = 1; n < 3000000; n = n * 7 / 4 + 1) {
		void *p = ::operator new(n);
		void *q = ::operator new[](n);

		std::memset(p, 1, n);
		::operator delete(p, n);
		::operator delete[](q, n);
		for (std::size_t al = 32; al <= ((std::size_t)1 << 23); al <<= 3) {
			p = ::operator new(n, std::align_val_t(al));
			CHECK((std::uintptr_t)p % al == 0, "new(%zu, align %zu)", n, al);
			::operator delete(p, n, std::align_val_t(al));
		}
	}
}

static void out_of_memory()
{
	bool caught = false;

	try {
		sink = new char[huge];
	} catch (const std::bad_alloc &e) {
		caught = true;
	}
	CHECK(caught, "new char[2^62] did not throw std::bad_alloc");
	caught = false;
	try {
		sink = ::operator new(huge, std::align_val_t(4096));
	} catch (const std::bad_alloc &) {
		caught = true;
	}
	CHECK(caught, "aligned new of 2^62 did not throw");
	CHECK(::operator new(huge, std::nothrow) == nullptr, "nothrow new of 2^62");
	CHECK(::operator new[](huge, std::align_val_t(64), std::nothrow) == nullptr,
	      "nothrow aligned new[]");

	/* the handler is called until it uninstalls itself, then bad_alloc */
	caught = false;
	std::set_new_handler(give_up_on_third_call);
	try {
		sink = ::operator new(huge);
	} catch (const std::bad_alloc &) {
		caught = true;
	}
	CHECK(caught && handler_calls == 3, "handler called %d times, caught %d", handler_calls,
	      caught);
	/* a handler's own exception unwinds through sefer's frames to the program */
	handler_calls = 0;
	caught = false;
	std::set_new_handler(throwing_handler);
	try {
		sink = new long[huge / 8];
	} catch (const out_of_reserve &e) {
		caught = !std::strcmp(e.what(), "out_of_reserve");
	}
	std::set_new_handler(nullptr);
	CHECK(caught && handler_calls == 1, "handler's exception: caught %d, calls %d", caught,
	      handler_calls);
}

/* 64 TiB: more than RAM + swap on the machine (checked), under vm.overcommit_memory 0. */
static void never_backed()
{
	const std::size_t tib64 = (std::size_t)1 << 46;
	struct sysinfo si;
	int mode = 0;
	bool caught = false;
	std::FILE *f = std::fopen("/proc/sys/vm/overcommit_memory", "r");

	if (f) {
		if (std::fscanf(f, "%d", &mode) != 1)
			mode = 0;
		std::fclose(f);
	}
	if (mode != 0 || sysinfo(&si) ||
	    ((double)si.totalram + (double)si.totalswap) * si.mem_unit >= (double)tib64) {
		std::printf("cxx: this machine might back 64 TiB: never_backed not checked\n");
		return;
	}
	try {
		char *p = new char[tib64];

		sink = p;
		delete[] p;
	} catch (const std::bad_alloc &) {
		caught = true;
	}
	CHECK(caught, "new char[1 << 46] (64 TiB) did not throw std::bad_alloc");
	void *p = ::operator new(tib64, std::nothrow);

	CHECK(p == nullptr, "nothrow new of 64 TiB served");
	::operator delete(p);
}

static void library()
{
	std::map<std::string, std::vector<int>> m;

	for (int i = 0; i < 20000; i++)
		m[std::to_string(i % 1000) + std::string(i % 50, 'x')].push_back(i);
	std::size_t total = 0;

	for (auto &kv : m) {
		total += kv.second.size();
		CHECK(owns(kv.second.data()), "vector storage not sefer's");
	}
	CHECK(total == 20000, "map holds %zu", total);
	auto sp = std::make_shared<std::string>(1000, 'y');
	CHECK(owns(sp.get()), "make_shared not sefer's");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "preload";

#ifdef SEFER_LINKED
	owns = sefer_owns;
#else
	owns = (bool (*)(const void *))dlsym(RTLD_DEFAULT, "sefer_owns");
#endif
	if (!owns) {
		std::fprintf(stderr, "cxx: sefer is not loaded\n");
		return 2;
	}
	if (!std::strcmp(mode, "delete-bad")) {
		void *p = ::operator new(100);

		sink = p;
		::operator delete(p, 5000); /* reported with CONFIG_HARDENED */
		return 0;
	}
	if (!std::strcmp(mode, "delete-align-bad")) {
		void *p = ::operator new(100, std::align_val_t(64));

		sink = p;
		::operator delete(p, std::align_val_t(1 << 20));
		return 0;
	}
	where_from(mode);
	forms();
	out_of_memory();
	never_backed();
	library();
	std::printf("cxx: %s: %d checks, %d failed\n", mode, checks, failures);
	return failures ? 1 : 0;
}
