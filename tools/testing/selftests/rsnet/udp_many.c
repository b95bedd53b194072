// SPDX-License-Identifier: GPL-2.0
/*
 * udp_many: N connected UDP sockets that send, for each line read on
 * stdin, one datagram each with an SO_TXTIME departure time, all the same:
 * DELAY_MS after the round starts (CLOCK_MONOTONIC), or the time making
 * the sockets took if that is longer, so every flow of fq is throttled
 * until then. A line "send MS" sets the delay of its round to
 * MS instead (a caller that has timed an earlier round's sends). The
 * sockets are made once: rounds against different qdiscs (C's fq, then
 * Rust's) cost one making and see the same flow keys.
 *
 *   udp_many ADDR PORT N DELAY_MS [FAILFILE]
 *
 * Socket i is bound to 10.89.0.(1 + i / 60000), port 1024 + i % 60000
 * (the caller adds those addresses): a connected UDP socket needs a
 * local port of its own, and one address has fewer than 65,536.
 *
 * With FAILFILE, "1" is written to it (/proc/self/make-it-fail) after the
 * sockets are made and before the sends: the allocations the sends make
 * (fq's enqueue, in this task) are then the ones fail_page_alloc sees.
 * Prints "sent K ..." a round and keeps the sockets (their flows' keys)
 * until stdin closes.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/net_tstamp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_TXTIME
#define SO_TXTIME 61
#define SCM_TXTIME SO_TXTIME
#endif

static long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * One datagram on each socket, all leaving DELAY ns after the round
 * starts. MADE is only reported.
 */
static int send_round(const int *fds, int n, long long delay, long long made)
{
	char cbuf[CMSG_SPACE(sizeof(__u64))];
	char payload[64] = "rsnet";
	long long t0 = mono_ns();
	unsigned long long at = t0 + delay;
	int i, sent = 0;

	for (i = 0; i < n; i++) {
		struct iovec iov = { payload, sizeof(payload) };
		struct msghdr m = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
		};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_TXTIME;
		cm->cmsg_len = CMSG_LEN(sizeof(__u64));
		memcpy(CMSG_DATA(cm), &at, sizeof(at));
		if (sendmsg(fds[i], &m, 0) == sizeof(payload))
			sent++;
	}
	/* "late" > 0: some packets left before the last was queued. */
	printf("sent %d in %lld ms (sockets made in %lld ms), late %lld ms\n",
	       sent, (mono_ns() - t0) / 1000000, made / 1000000,
	       (mono_ns() - (long long)at) / 1000000);
	return fflush(stdout) ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct sock_txtime st = { .clockid = CLOCK_MONOTONIC };
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct sockaddr_in from = { .sin_family = AF_INET };
	long long start = mono_ns(), made, delay;
	struct rlimit rl;
	int n, i, *fds;
	char line[64];

	if (argc < 5) {
		fprintf(stderr, "usage: udp_many ADDR PORT N DELAY_MS [FAILFILE]\n");
		return 2;
	}
	inet_pton(AF_INET, argv[1], &to.sin_addr);
	to.sin_port = htons(atoi(argv[2]));
	n = atoi(argv[3]);
	rl.rlim_cur = rl.rlim_max = n + 64;
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		perror("setrlimit");
		return 1;
	}
	fds = calloc(n, sizeof(*fds));
	if (!fds)
		return 1;
	for (i = 0; i < n; i++) {
		from.sin_addr.s_addr = htonl(0x0a590001 + i / 60000);
		from.sin_port = htons(1024 + i % 60000);
		fds[i] = socket(AF_INET, SOCK_DGRAM, 0);
		if (fds[i] < 0 ||
		    setsockopt(fds[i], SOL_SOCKET, SO_TXTIME, &st, sizeof(st)) ||
		    bind(fds[i], (struct sockaddr *)&from, sizeof(from)) ||
		    connect(fds[i], (struct sockaddr *)&to, sizeof(to))) {
			fprintf(stderr, "socket %d: %m\n", i);
			return 1;
		}
	}
	if (argc > 5) {
		int f = open(argv[5], O_WRONLY);

		if (f < 0 || write(f, "1", 1) != 1) {
			perror(argv[5]);
			return 1;
		}
		close(f);
	}
	made = mono_ns() - start;
	/*
	 * A round without a delay of its own waits DELAY_MS, or the time
	 * making the sockets took if longer: the sends take 0.55 to 0.8 as
	 * long (59 runs, debug and KASAN kernels), so a slower kernel does not
	 * send the first packets before the last is queued.
	 */
	delay = strtoll(argv[4], NULL, 10) * 1000000LL;
	if (delay < made)
		delay = made;
	while (fgets(line, sizeof(line), stdin)) {
		long long ms;

		if (send_round(fds, n, sscanf(line, "send %lld", &ms) == 1 ?
			       ms * 1000000LL : delay, made))
			return 1;
	}
	return 0;
}
