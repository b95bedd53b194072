// SPDX-License-Identifier: GPL-2.0
/*
 * udp_churn: a server's connected UDP sockets coming and going, for fq's
 * gc. Two modes:
 *
 *   udp_churn churn ADDR PORT N GENS PERIOD_MS
 *
 * GENS generations, PERIOD_MS apart (start to start): each opens N
 * connected UDP sockets, sends 2 datagrams on each, and closes them all.
 * After each generation it prints "gen G sent S ms M" (M: the
 * generation's time) and sleeps until the next one is due; the caller
 * reads fq's counters meanwhile.
 *
 *   udp_churn return ADDR PORT N IDLE_MS
 *
 * N connected UDP sockets send two datagrams each (the second, paced,
 * makes fq walk its old flows and detach the idle ones), wait IDLE_MS
 * (past fq's gc age) and send one more each, in the same order; between
 * the two rounds it prints "idle" and reads a line from stdin (the
 * caller reads fq's counters then), and after the second "returned S".
 *
 * Socket i is bound to 10.89.0.(1 + i / 60000), port 1024 + i % 60000 (the
 * caller adds those addresses).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(long long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	if (ms > 0)
		nanosleep(&ts, NULL);
}

/* N connected sockets into @fds; 0, or -1 with a message. */
static int open_socks(int *fds, int n, const struct sockaddr_in *to)
{
	struct sockaddr_in from = { .sin_family = AF_INET };
	int i;

	for (i = 0; i < n; i++) {
		from.sin_addr.s_addr = htonl(0x0a590001 + i / 60000);
		from.sin_port = htons(1024 + i % 60000);
		fds[i] = socket(AF_INET, SOCK_DGRAM, 0);
		if (fds[i] < 0 ||
		    bind(fds[i], (const struct sockaddr *)&from, sizeof(from)) ||
		    connect(fds[i], (const struct sockaddr *)to, sizeof(*to))) {
			fprintf(stderr, "socket %d: %m\n", i);
			return -1;
		}
	}
	return 0;
}

/* One datagram on each socket; the number sent. */
static int send_all(const int *fds, int n)
{
	static const char payload[64] = "rsnet";
	int i, sent = 0;

	for (i = 0; i < n; i++)
		sent += send(fds[i], payload, sizeof(payload), 0) ==
			sizeof(payload);
	return sent;
}

static int flush_line(void)
{
	return fflush(stdout) ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	char line[64];
	struct rlimit rl;
	int n, i, g, *fds;

	if (argc < 6 || (strcmp(argv[1], "churn") && strcmp(argv[1], "return"))) {
		fprintf(stderr, "usage: udp_churn churn ADDR PORT N GENS PERIOD_MS\n"
			"       udp_churn return ADDR PORT N IDLE_MS\n");
		return 2;
	}
	inet_pton(AF_INET, argv[2], &to.sin_addr);
	to.sin_port = htons(atoi(argv[3]));
	n = atoi(argv[4]);
	rl.rlim_cur = rl.rlim_max = n + 64;
	if (n < 1 || setrlimit(RLIMIT_NOFILE, &rl)) {
		perror("setrlimit");
		return 1;
	}
	fds = calloc(n, sizeof(*fds));
	if (!fds)
		return 1;

	if (!strcmp(argv[1], "return")) {
		if (open_socks(fds, n, &to))
			return 1;
		send_all(fds, n);
		send_all(fds, n);
		sleep_ms(atoll(argv[5]));
		printf("idle\n");
		if (flush_line() || !fgets(line, sizeof(line), stdin))
			return 1;
		printf("returned %d\n", send_all(fds, n));
		return flush_line();
	}

	for (g = 0; g < atoi(argv[5]); g++) {
		long long t0 = mono_ms();
		int sent;

		if (open_socks(fds, n, &to))
			return 1;
		sent = send_all(fds, n);
		sent += send_all(fds, n);
		for (i = 0; i < n; i++)
			close(fds[i]);
		printf("gen %d sent %d ms %lld\n", g + 1, sent, mono_ms() - t0);
		if (flush_line())
			return 1;
		sleep_ms(t0 + atoll(argv[6]) - mono_ms());
	}
	return 0;
}
