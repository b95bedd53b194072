// SPDX-License-Identifier: GPL-2.0
/*
 * udp_sink: read datagrams from a UDP port until SIGTERM, as an application
 * does; print how many were read. Batches of up to 64 with recvmmsg(), so
 * the reader costs little per packet and most of each packet's work is the
 * kernel's (receive, and the free of its page_pool pages on this CPU).
 *
 *   udp_sink ADDR PORT
 *	prints "ready" once bound, then "read N" when terminated
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH	64
#define MSGLEN	2048

/* Lock-free, so safe to set from the signal handler. */
static atomic_int stop;

static void on_term(int sig)
{
	(void)sig;
	atomic_store(&stop, 1);
}

int main(int argc, char **argv)
{
	static char bufs[BATCH][MSGLEN];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sigaction sa = { .sa_handler = on_term };
	unsigned long long got = 0;
	int fd, i, n;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1) {
		fprintf(stderr, "usage: udp_sink ADDR PORT\n");
		return 2;
	}
	sin.sin_port = htons(atoi(argv[2]));
	/* No SA_RESTART: the signal ends a blocked recvmmsg() with EINTR. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		perror("udp_sink: socket/bind");
		return 1;
	}
	for (i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = MSGLEN;
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (!atomic_load(&stop)) {
		n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("udp_sink: recvmmsg");
			return 1;
		}
		got += n;
	}
	printf("read %llu\n", got);
	return 0;
}
