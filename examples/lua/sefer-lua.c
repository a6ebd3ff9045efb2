// SPDX-License-Identifier: MIT
/*
 * sefer-lua: a Lua 5.4 host with the allocator compiled in. The worked example of
 * Documentation/vendoring.rst.
 *
 * It #includes the amalgamation (sefer.c, made from configs/vendor_defconfig) with
 * SEFER_STATIC_ALL and SEFER_STATIC_API, so the allocator is part of this file and exports
 * nothing (sefer's static names share this file's scope: none of ours may clash). Each lua_State
 * gets a sefer heap of its own: lua_newstate's allocator is heap_alloc with the
 * struct sefer_heap * as its ud. At close, the heap goes in one call: the allocator is
 * switched to heap_alloc_closing, whose frees do nothing (lua_close still runs finalizers,
 * which may allocate and resize; that still works), lua_close frees nothing one by one, and
 * sefer_heap_destroy(h) then releases every block at once. SEFER_LUA_CLOSE=free keeps the
 * per-object frees (to measure the difference).
 *
 * Built with -DSEFER_LUA_LIBC_ALLOC it is the same host on the C library's realloc and free
 * (the allocator every lua_Alloc example uses), without sefer: the baseline of make bench-lua.
 *
 * Command line, like lua5.4's (no interactive mode):
 *   sefer-lua [-e stat] [-l mod] [-v] [-E] [-W] [--] [script [args]]
 * script "-" (or none, with stdin not a terminal) reads the chunk from stdin. The script's
 * arguments are in the global table arg (arg[0] the script, arg[1..n] its arguments, the
 * host and its options at negative indices) and are the chunk's "...". Errors go to stderr as
 * "sefer-lua: message" with a traceback; the exit status is 0 or 1, or os.exit's.
 * Environment: LUA_INIT_5_4 or LUA_INIT (a chunk, or @file) runs first, unless -E;
 * SEFER_LUA_CLOSE=free (above); SEFER_LUA_TIMES=1 prints the time lua_close (and the heap's
 * destroy) took and the peak RSS (VmHWM) on stderr; SEFER_SHOW_STATS=1 prints sefer's stats
 * at exit (sefer does, from a destructor); SEFER_LUA_MOVE=1 creates the state on the main
 * thread and runs it to completion on another one, its heap moved with it
 * (sefer_heap_release, then sefer_heap_adopt: Documentation/heaps.rst), as an M:N runtime
 * moves a state between its workers.
 */
#ifndef SEFER_LUA_LIBC_ALLOC
#define SEFER_STATIC_ALL
#define SEFER_STATIC_API
#include "sefer.c"
#else
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

static const char *progname = "sefer-lua";

static double host_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- allocators; state_close returns the ms lua_close took, *destroy_ms the heap's ---- */
#ifndef SEFER_LUA_LIBC_ALLOC
/*
 * Lua's contract (lua_Alloc): nsize 0 frees ptr and returns NULL; ptr NULL allocates nsize
 * bytes; otherwise resize, and a shrink (nsize <= osize) must not fail.
 */
static void *heap_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct sefer_heap *h = ud;
	void *q;

	if (nsize == 0) {
		sefer_free(ptr);
		return NULL;
	}
	if (!ptr)
		return sefer_heap_malloc(h, nsize);
	q = sefer_heap_realloc(h, ptr, nsize);
	return q || nsize > osize ? q : ptr; /* a failed shrink keeps the block */
}

/* The same during lua_close: a free does nothing, sefer_heap_destroy frees all after it. */
static void *heap_alloc_closing(void *ud, void *ptr, size_t osize, size_t nsize)
{
	if (nsize == 0)
		return NULL;
	return heap_alloc(ud, ptr, osize, nsize);
}

static lua_State *state_new(void)
{
	struct sefer_heap *h = sefer_heap_new();
	lua_State *L = h ? lua_newstate(heap_alloc, h) : NULL;

	if (h && !L)
		sefer_heap_destroy(h);
	return L;
}

static double state_close(lua_State *L, double *destroy_ms)
{
	void *ud;
	lua_Alloc f = lua_getallocf(L, &ud);
	const char *how = getenv("SEFER_LUA_CLOSE");
	double t0 = host_clock_ms(), t1;

	if (f == heap_alloc && !(how && strcmp(how, "free") == 0))
		lua_setallocf(L, heap_alloc_closing, ud);
	lua_close(L);
	t1 = host_clock_ms();
	sefer_heap_destroy(ud);
	*destroy_ms = host_clock_ms() - t1;
	return t1 - t0;
}

/* SEFER_LUA_MOVE: the creating thread lets the state's heap go, the running one takes it. */
static bool state_release(lua_State *L)
{
	void *ud;

	return lua_getallocf(L, &ud) != heap_alloc || sefer_heap_release(ud);
}

static bool state_adopt(lua_State *L)
{
	void *ud;

	return lua_getallocf(L, &ud) != heap_alloc || sefer_heap_adopt(ud);
}
#else
static void *libc_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	(void)ud;
	(void)osize;
	if (nsize == 0) {
		free(ptr);
		return NULL;
	}
	return realloc(ptr, nsize);
}

static lua_State *state_new(void)
{
	return lua_newstate(libc_alloc, NULL);
}

static double state_close(lua_State *L, double *destroy_ms)
{
	double t0 = host_clock_ms();

	lua_close(L);
	*destroy_ms = 0;
	return host_clock_ms() - t0;
}

/* the C library's allocator serves any thread: nothing to move */
static bool state_release(lua_State *L)
{
	(void)L;
	return true;
}

static bool state_adopt(lua_State *L)
{
	(void)L;
	return true;
}
#endif

/* ---- panic and warnings (luaL_newstate's are lauxlib's own; lua_newstate has none) ---- */
static int panic(lua_State *L)
{
	const char *msg = lua_tostring(L, -1);

	fprintf(stderr, "PANIC: unprotected error in call to Lua API (%s)\n",
		msg ? msg : "error object is not a string");
	return 0;
}

struct warn_state {
	bool on;      /* warnings are shown (-W, or "@on") */
	bool pending; /* a message is being continued */
};

/* lua_WarnFunction: "@on" and "@off" switch warnings; a message may come in pieces. */
static void warn(void *ud, const char *msg, int tocont)
{
	struct warn_state *w = ud;

	if (!w->pending && !tocont && msg[0] == '@') {
		if (strcmp(msg, "@on") == 0)
			w->on = true;
		else if (strcmp(msg, "@off") == 0)
			w->on = false;
		return;
	}
	if (w->on) {
		if (!w->pending)
			fputs("Lua warning: ", stderr);
		fputs(msg, stderr);
		if (!tocont)
			fputs("\n", stderr);
		fflush(stderr);
	}
	w->pending = tocont;
}

/* ---- running chunks ---- */
static void report(lua_State *L, int status)
{
	if (status != LUA_OK) {
		const char *msg = lua_tostring(L, -1);

		fprintf(stderr, "%s: %s\n", progname, msg ? msg : "(error object is not a string)");
		fflush(stderr);
		lua_pop(L, 1);
	}
}

/* The message handler: a string (or __tostring) message plus a traceback. */
static int traceback(lua_State *L)
{
	const char *msg = lua_tostring(L, 1);

	if (!msg) {
		if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
			return 1;
		msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
	}
	luaL_traceback(L, L, msg, 1);
	return 1;
}

/* Call the function under its nargs arguments with the traceback handler. */
static int call(lua_State *L, int nargs, int nresults)
{
	int base = lua_gettop(L) - nargs;
	int status;

	lua_pushcfunction(L, traceback);
	lua_insert(L, base);
	status = lua_pcall(L, nargs, nresults, base);
	lua_remove(L, base);
	return status;
}

static int run_chunk(lua_State *L, int status)
{
	if (status == LUA_OK)
		status = call(L, 0, 0);
	report(L, status);
	return status;
}

static int run_string(lua_State *L, const char *s, const char *name)
{
	return run_chunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

/* -l mod: require it and bind the result to the global mod (a "g=mod" form names it g). */
static int run_require(lua_State *L, const char *spec)
{
	char *name = strdup(spec), *eq = strchr(name, '=');
	const char *mod = eq ? eq + 1 : name;
	int status;

	if (eq)
		*eq = '\0';
	lua_getglobal(L, "require");
	lua_pushstring(L, mod);
	status = call(L, 1, 1);
	if (status == LUA_OK)
		lua_setglobal(L, name);
	free(name);
	report(L, status);
	return status;
}

static int run_init(lua_State *L)
{
	const char *name = "=LUA_INIT_" LUA_VERSION_MAJOR "_" LUA_VERSION_MINOR;
	const char *init = getenv(name + 1);

	if (!init) {
		name = "=LUA_INIT";
		init = getenv(name + 1);
	}
	if (!init)
		return LUA_OK;
	if (init[0] == '@')
		return run_chunk(L, luaL_loadfile(L, init + 1));
	return run_string(L, init, name);
}

struct args {
	int argc;
	char **argv;
	int script;    /* index of the script in argv; argc when there is none */
	bool version;  /* -v */
	bool no_env;   /* -E */
	bool warnings; /* -W */
	bool ran_e;    /* -e or -l given: no stdin chunk without a script */
};

static int usage(const char *bad, bool needs_arg)
{
	if (needs_arg)
		fprintf(stderr, "%s: '%s' needs argument\n", progname, bad);
	else
		fprintf(stderr, "%s: unrecognized option '%s'\n", progname, bad);
	fprintf(stderr,
		"usage: %s [options] [script [args]]\n"
		"Available options are:\n"
		"  -e stat   execute string 'stat'\n"
		"  -l mod    require library 'mod' into global 'mod'\n"
		"  -l g=mod  require library 'mod' into global 'g'\n"
		"  -v        show version information\n"
		"  -E        ignore environment variables\n"
		"  -W        turn warnings on\n"
		"  --        stop handling options\n"
		"  -         stop handling options and execute stdin\n",
		progname);
	return -1;
}

/* Scan the options; 0 or -1 for a bad one (usage printed). */
static int parse_args(struct args *a)
{
	int i;

	a->script = a->argc;
	for (i = 1; i < a->argc; i++) {
		const char *o = a->argv[i];

		if (o[0] != '-' || strcmp(o, "-") == 0) {
			a->script = i;
			return 0;
		}
		if (strcmp(o, "--") == 0) {
			a->script = i + 1;
			return 0;
		}
		if (strcmp(o, "-v") == 0)
			a->version = true;
		else if (strcmp(o, "-E") == 0)
			a->no_env = true;
		else if (strcmp(o, "-W") == 0)
			a->warnings = true;
		else if (strcmp(o, "-e") == 0 || strcmp(o, "-l") == 0 ||
			 ((o[1] == 'e' || o[1] == 'l') && o[2])) {
			if (!o[2] && ++i >= a->argc)
				return usage(o, true);
			a->ran_e = true;
		} else {
			return usage(o, false);
		}
	}
	return 0;
}

/* arg: the script at 0, its arguments at 1..n, the host and its options below 0. */
static void set_arg_table(lua_State *L, const struct args *a)
{
	int i, base = a->script < a->argc ? a->script : 0;

	lua_createtable(L, a->argc - base, base + 1);
	for (i = 0; i < a->argc; i++) {
		lua_pushstring(L, a->argv[i]);
		lua_rawseti(L, -2, i - base);
	}
	lua_setglobal(L, "arg");
}

static int run_options(lua_State *L, const struct args *a)
{
	int i;

	for (i = 1; i < a->script; i++) {
		const char *o = a->argv[i];
		const char *val;
		int status = LUA_OK;

		if (o[0] != '-' || (o[1] != 'e' && o[1] != 'l'))
			continue;
		val = o[2] ? o + 2 : a->argv[++i];
		if (o[1] == 'e')
			status = run_string(L, val, "=(command line)");
		else
			status = run_require(L, val);
		if (status != LUA_OK)
			return status;
	}
	return LUA_OK;
}

static int run_script(lua_State *L, const struct args *a)
{
	const char *fname = a->argv[a->script];
	int i, n = a->argc - a->script - 1;
	int status;

	if (strcmp(fname, "-") == 0 && strcmp(a->argv[a->script - 1], "--") != 0)
		fname = NULL; /* stdin */
	status = luaL_loadfile(L, fname);
	if (status == LUA_OK) {
		luaL_checkstack(L, n + 3, "too many arguments to script");
		for (i = 1; i <= n; i++)
			lua_pushstring(L, a->argv[a->script + i]);
		status = call(L, n, LUA_MULTRET);
	}
	report(L, status);
	return status;
}

/* Everything, in protected mode (a memory error while setting up is reported too). */
static int host_main(lua_State *L)
{
	struct args *a = lua_touserdata(L, 1);
	struct warn_state *w = lua_touserdata(L, 2);

	luaL_checkversion(L);
	lua_gc(L, LUA_GCSTOP);
	if (a->no_env) {
		lua_pushboolean(L, 1);
		lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
	}
	luaL_openlibs(L);
	set_arg_table(L, a);
	lua_gc(L, LUA_GCRESTART);
	lua_gc(L, LUA_GCGEN, 0, 0); /* as lua5.4 runs */
	w->on = a->warnings;
	if (a->version)
		puts(LUA_COPYRIGHT);
	if (!a->no_env && run_init(L) != LUA_OK)
		return 0;
	if (run_options(L, a) != LUA_OK)
		return 0;
	if (a->script < a->argc) {
		if (run_script(L, a) != LUA_OK)
			return 0;
	} else if (!a->ran_e && !a->version) {
		if (isatty(STDIN_FILENO)) {
			fprintf(stderr, "%s: no interactive mode; give a script (or - for stdin)\n",
				progname);
			return 0;
		}
		if (run_chunk(L, luaL_loadfile(L, NULL)) != LUA_OK)
			return 0;
	}
	lua_pushboolean(L, 1);
	return 1;
}

/* The process's peak resident set since exec (VmHWM), in KiB; 0 if unknown. */
static long peak_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* One state's life after lua_newstate: run everything, close. */
struct run {
	lua_State *L;
	struct args *a;
	struct warn_state *w;
	bool moved; /* adopt the state's heap first (SEFER_LUA_MOVE) */
	int status, ok;
	double close_ms, destroy_ms;
};

static void *run_state(void *arg)
{
	struct run *r = arg;
	lua_State *L = r->L;

	if (r->moved && !state_adopt(L)) {
		fprintf(stderr, "%s: cannot adopt the state's heap\n", progname);
		return NULL;
	}
	lua_pushcfunction(L, host_main);
	lua_pushlightuserdata(L, r->a);
	lua_pushlightuserdata(L, r->w);
	r->status = lua_pcall(L, 2, 1, 0);
	r->ok = lua_toboolean(L, -1);
	report(L, r->status);
	r->close_ms = state_close(L, &r->destroy_ms);
	return NULL;
}

int main(int argc, char **argv)
{
	struct args a = {.argc = argc, .argv = argv};
	struct warn_state w = {0};
	const char *times = getenv("SEFER_LUA_TIMES"), *move = getenv("SEFER_LUA_MOVE");
	struct run r = {.a = &a, .w = &w, .status = -1};
	pthread_t worker;

	if (argv[0] && argv[0][0])
		progname = argv[0];
	if (parse_args(&a) < 0)
		return EXIT_FAILURE;
	r.L = state_new();
	if (!r.L) {
		fprintf(stderr, "%s: cannot create state: not enough memory\n", progname);
		return EXIT_FAILURE;
	}
	lua_atpanic(r.L, panic);
	lua_setwarnf(r.L, warn, &w);
	r.moved = move && strcmp(move, "1") == 0;
	if (!r.moved) {
		run_state(&r);
	} else if (!state_release(r.L) || pthread_create(&worker, NULL, run_state, &r) ||
		   pthread_join(worker, NULL)) {
		fprintf(stderr, "%s: cannot move the state to another thread\n", progname);
		return EXIT_FAILURE;
	}
	if (times && strcmp(times, "1") == 0)
		fprintf(stderr,
			"%s: close %.3f ms (lua_close %.3f, heap destroy %.3f), peak RSS %ld KiB\n",
			progname, r.close_ms + r.destroy_ms, r.close_ms, r.destroy_ms,
			peak_rss_kb());
	return r.ok && r.status == LUA_OK ? EXIT_SUCCESS : EXIT_FAILURE;
}
