// SPDX-License-Identifier: MIT
/*
 * peakrss PROGRAM [ARGS...]: run PROGRAM and write its peak resident set, in KiB, as the last
 * line of stderr ("peakrss: maxrss_kb=N"), for the real programs of bench/run.py.
 *
 * The runner cannot take it from its own wait4(): a program it starts execs from a (v)fork of
 * the runner, and Linux records the high-water mark of the address space an exec replaces as
 * the new program's ru_maxrss; every program whose own peak was below the runner's (some 16
 * MiB) read as the runner. Here the program is forked from this small process, whose own
 * resident set is the floor, and exec'd. The program keeps stdin, stdout and stderr; peakrss
 * exits as the program did (its exit status, or killed by its signal), and a signal that kills
 * peakrss (the runner's timeout) kills the program too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	pid_t parent = getpid(), pid;
	struct rusage ru;
	int status;

	if (argc < 2) {
		fprintf(stderr, "usage: peakrss PROGRAM [ARGS...]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		perror("peakrss: fork");
		return 2;
	}
	if (!pid) {
		/* killed with peakrss; a parent gone before the prctl took effect is seen here */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(127);
		execvp(argv[1], argv + 1);
		fprintf(stderr, "peakrss: %s: %m\n", argv[1]);
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("peakrss: wait4");
			return 2;
		}
	}
	fprintf(stderr, "peakrss: maxrss_kb=%ld\n", ru.ru_maxrss);
	if (WIFSIGNALED(status)) {
		signal(WTERMSIG(status), SIG_DFL);
		raise(WTERMSIG(status));
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}
