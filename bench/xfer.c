// SPDX-License-Identifier: MIT
/*
 * xfer: producer threads allocate, consumer threads free, through a shared queue of batches.
 *
 * The threads split into producers and consumers at --ratio P:C (1:1 or 1:3; --threads is
 * rounded down to a multiple of P + C, at least one of each). A producer allocates a batch of
 * BATCH blocks (64 B each with --size 64, or 16..1024 B at random with --size 0, "mixed"),
 * writes their first and last bytes, puts the pointers into a batch array it also allocated,
 * and appends the batch to one queue shared by all threads. A consumer takes the oldest
 * batch, frees every block and the batch array. Every free is a cross-thread free of a block
 * the freeing thread never saw allocated, in runs of BATCH from one producer, the shape of a
 * server whose network threads allocate requests that worker threads retire. The queue holds
 * at most QUEUE_MAX batches (a producer waits while it is full), so the live set and the peak
 * RSS stay bounded whatever the allocator's speed. The consumers start once the queue first
 * holds QUEUE_MAX batches (or the producers are done), so every run, under every allocator,
 * reaches that live set: the peak RSS is the same live data plus what the allocator holds
 * besides. Without the fill, whether a run ever filled the queue was up to the scheduler
 * (runs of one build read 3-5 or 11-12 MiB on the mixed rows: Documentation/benchmarks.rst).
 *
 *   xfer --threads 2 --ratio 1:1 --size 64 --ops 8M [--seed N]
 *
 * --ops is the number of blocks over all producers. Reported ops count every malloc and free
 * (of blocks and batch arrays). The param is "<size>-<P>to<C>", size "64B" or "mixed".
 *
 * XFER_STATS=1 in the environment adds one line on stderr: the queue's occupancy (most and
 * time-weighted mean batches queued, and the requested bytes they held), so a peak RSS can be
 * split into live data and what the allocator holds besides. XFER_STATS=2 under sefer
 * (sefer_stats_get found by dlsym) adds a second line: a consumer samples the allocator's own
 * figures every 16 batches and reports the sample taken with the most bytes queued. The
 * samples slow the consumers (a segment walk and a /proc read each), so the queue runs fuller
 * than without them: read occupancy from XFER_STATS=1. Off by default: without it the timed
 * work is one add per block (in a register) and one branch per batch more.
 */
#include "common.h"
#include "sefer.h" /* struct sefer_stats only: nothing is linked from it */

#define BATCH		256
#define QUEUE_MAX	64

struct batch {
	struct batch *next;
	unsigned count;
	unsigned bytes; /* requested bytes of its blocks (XFER_STATS only; in padding) */
	void *block[BATCH];
};
_Static_assert(sizeof(struct batch) == 16 + BATCH * sizeof(void *),
	       "bytes lies in padding: the batch array's size class is the one it had without it");

static struct {
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	struct batch *head, *tail;
	unsigned length;
	bool filled; /* the queue has held QUEUE_MAX batches: the consumers may take */
	int producers_left;
} queue = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.not_empty = PTHREAD_COND_INITIALIZER,
	.not_full = PTHREAD_COND_INITIALIZER,
};

static int producers, group_p, group_c;

/* XFER_STATS: the queue's occupancy, updated under queue.lock */
static struct {
	int on;
	double t0, t_last, len_time, bytes_time;
	uint64_t bytes, bytes_max;
	unsigned len_max;
	/* sefer's own figures at the sampled RSS peak */
	size_t (*sefer_get)(struct sefer_stats *st, size_t size);
	uint64_t sample_rss_kb, sample_queued;
	struct sefer_stats sample;
	unsigned sample_len;
} qstat;

/* Account the time since the last change at the old occupancy, then apply the change. */
static void qstat_change(long dlen, int64_t dbytes)
{
	double t = now_sec();

	qstat.len_time += (double)queue.length * (t - qstat.t_last);
	qstat.bytes_time += (double)qstat.bytes * (t - qstat.t_last);
	qstat.t_last = t;
	queue.length += dlen;
	qstat.bytes += dbytes;
	if (queue.length > qstat.len_max)
		qstat.len_max = queue.length;
	if (qstat.bytes > qstat.bytes_max)
		qstat.bytes_max = qstat.bytes;
}

/* Resident KiB now, from /proc/self/statm with raw calls (no allocation). */
static uint64_t rss_now_kb(void)
{
	char buf[128];
	unsigned long size, res;
	int fd = open("/proc/self/statm", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "%lu %lu", &size, &res) != 2)
		return 0;
	return res * (uint64_t)(sysconf(_SC_PAGESIZE) / 1024);
}

/*
 * A consumer's sample of sefer's figures, kept when the queue holds the most bytes seen at a
 * sample (the RSS breaking ties), so it shows the allocator when the live data peak.
 */
static void qstat_sample(void)
{
	struct sefer_stats st = {0};
	uint64_t rss = rss_now_kb();

	qstat.sefer_get(&st, sizeof(st));
	pthread_mutex_lock(&queue.lock);
	if (qstat.bytes > qstat.sample_queued ||
	    (qstat.bytes == qstat.sample_queued && rss > qstat.sample_rss_kb)) {
		qstat.sample_rss_kb = rss;
		qstat.sample_queued = qstat.bytes;
		qstat.sample_len = queue.length;
		qstat.sample = st;
	}
	pthread_mutex_unlock(&queue.lock);
}

static void qstat_report(void)
{
	double span = qstat.t_last - qstat.t0;
	const struct sefer_stats *f = &qstat.sample;

	if (span <= 0)
		span = 1e-9;
	fprintf(stderr,
		"XFER_STATS queue_max=%u queue_mean=%.1f queued_bytes_max=%llu "
		"queued_bytes_mean=%.0f batch=%u\n",
		qstat.len_max, qstat.len_time / span, (unsigned long long)qstat.bytes_max,
		qstat.bytes_time / span, BATCH);
	if (qstat.sefer_get)
		fprintf(stderr,
			"XFER_STATS sefer_sample rss_kb=%llu queue=%u queued_bytes=%llu "
			"committed=%llu committed_peak=%llu in_use_bytes=%llu small_bytes=%llu "
			"purged=%llu segments=%llu\n",
			(unsigned long long)qstat.sample_rss_kb, qstat.sample_len,
			(unsigned long long)qstat.sample_queued, (unsigned long long)f->committed,
			(unsigned long long)f->committed_peak, (unsigned long long)f->in_use_bytes,
			(unsigned long long)f->small_bytes, (unsigned long long)f->purged,
			(unsigned long long)f->segments);
}

static void queue_put(struct batch *b)
{
	pthread_mutex_lock(&queue.lock);
	while (queue.length == QUEUE_MAX)
		pthread_cond_wait(&queue.not_full, &queue.lock);
	b->next = NULL;
	if (queue.tail)
		queue.tail->next = b;
	else
		queue.head = b;
	queue.tail = b;
	if (qstat.on)
		qstat_change(1, b->bytes);
	else
		queue.length++;
	if (queue.filled) {
		pthread_cond_signal(&queue.not_empty);
	} else if (queue.length == QUEUE_MAX) {
		queue.filled = true;
		pthread_cond_broadcast(&queue.not_empty);
	}
	pthread_mutex_unlock(&queue.lock);
}

/*
 * The oldest batch, or NULL once every producer is done and the queue is empty. Nothing is
 * taken before the queue first filled, unless the producers are done.
 */
static struct batch *queue_take(void)
{
	struct batch *b;

	pthread_mutex_lock(&queue.lock);
	while ((!queue.head || !queue.filled) && queue.producers_left)
		pthread_cond_wait(&queue.not_empty, &queue.lock);
	b = queue.head;
	if (b) {
		queue.head = b->next;
		if (!queue.head)
			queue.tail = NULL;
		if (qstat.on)
			qstat_change(-1, -(int64_t)b->bytes);
		else
			queue.length--;
		pthread_cond_signal(&queue.not_full);
	}
	pthread_mutex_unlock(&queue.lock);
	return b;
}

static void produce(struct worker *w)
{
	uint64_t blocks = w->o->ops / (uint64_t)producers, made = 0, ops = 0;
	struct rng r;

	rng_init(&r, w->o->seed, (uint64_t)w->idx);
	while (made < blocks) {
		struct batch *b = xmalloc(sizeof(*b));
		unsigned bytes = 0;

		ops++;
		b->count = 0;
		while (b->count < BATCH && made < blocks) {
			size_t n = w->o->size ? w->o->size : 16 + rng_below(&r, 1024 - 16 + 1);
			void *p = xmalloc(n);

			touch(p, n);
			b->block[b->count++] = p;
			bytes += (unsigned)n;
			made++;
			ops++;
		}
		b->bytes = bytes;
		queue_put(b);
		if (bench_expired(w))
			break;
	}
	pthread_mutex_lock(&queue.lock);
	if (!--queue.producers_left)
		pthread_cond_broadcast(&queue.not_empty);
	pthread_mutex_unlock(&queue.lock);
	w->ops = ops;
}

static void consume(struct worker *w)
{
	struct batch *b;
	uint64_t ops = 0, taken = 0;

	while ((b = queue_take())) {
		if (qstat.sefer_get && !(taken++ & 15))
			qstat_sample();
		for (unsigned i = 0; i < b->count; i++)
			free(b->block[i]);
		ops += b->count + 1;
		free(b);
	}
	w->ops = ops;
}

/* In each group of P + C threads, the first P produce and the others consume. */
static void worker(struct worker *w)
{
	if (w->idx % (group_p + group_c) < group_p)
		produce(w);
	else
		consume(w);
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "xfer", .threads = 2, .ops = 8u << 20, .seed = 42, .size = 64,
	};
	const char *ratio = "1:1";
	int p = 1, c = 1, groups;
	uint64_t ops;
	double secs;
	char param[48];

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--ratio"))
			continue;
		ratio = argv[i + 1];
		for (int j = i; j + 2 <= argc; j++)
			argv[j] = argv[j + 2];
		argc -= 2;
		break;
	}
	if (sscanf(ratio, "%d:%d", &p, &c) != 2 || p < 1 || c < 1) {
		fprintf(stderr, "xfer: --ratio must be P:C, as 1:1 or 1:3\n");
		return 2;
	}
	bench_parse(&o, argc, argv, " [--ratio P:C] [--size BYTES|0]");
	groups = o.threads / (p + c);
	if (groups < 1) {
		fprintf(stderr, "xfer: --threads %d is less than one group of %d:%d\n", o.threads,
			p, c);
		return 2;
	}
	o.threads = groups * (p + c);
	producers = groups * p;
	group_p = p;
	group_c = c;
	queue.producers_left = producers;
	qstat.on = getenv("XFER_STATS") ? atoi(getenv("XFER_STATS")) : 0;
	if (qstat.on) {
		qstat.t0 = qstat.t_last = now_sec();
		if (qstat.on >= 2)
			qstat.sefer_get = (size_t (*)(struct sefer_stats *, size_t))dlsym(RTLD_DEFAULT,
									      "sefer_stats_get");
	}
	secs = bench_run_threads(&o, worker, NULL, &ops);
	if (qstat.on)
		qstat_report();
	if (o.size)
		snprintf(param, sizeof(param), "%zuB-%dto%d", o.size, p, c);
	else
		snprintf(param, sizeof(param), "mixed-%dto%d", p, c);
	bench_report(&o, param, ops, secs);
	return 0;
}
