// SPDX-License-Identifier: GPL-2.0
/*
 * Zero-copy TCP transfers for the TX skb cache test.
 *
 *   zc_xfer recv ADDR PORT [BUF]
 *	accept one connection, read to EOF, check every byte against the
 *	pattern; print the byte count. Exit 1 on a wrong byte.
 *   zc_xfer send MODE ADDR PORT BYTES [BUF]
 *	send BYTES of the pattern from one buffer of BUF bytes (default
 *	1 MiB, a multiple of 4096) that is never written while the transfer
 *	runs, with MODE:
 *	  uring-fixed	io_uring SEND_ZC from a registered (fixed) buffer:
 *			the skbs' frags carry SKBFL_MANAGED_FRAG_REFS (the
 *			pages are pinned by the ring, the skb holds no page
 *			reference of its own);
 *	  uring		io_uring SEND_ZC from a plain user buffer;
 *	  msg		send(MSG_ZEROCOPY) with completions from the error
 *			queue;
 *	  copy		plain send(), for comparison.
 *	Waits for every zero-copy completion (notification) before it
 *	exits, and prints the bytes sent and the completions received.
 *
 * The pattern repeats every BUF bytes and differs between any two 64 KiB
 * chunks of it, so a lost, repeated or reordered chunk is seen. A small
 * BUF sends the same few pages again and again.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY 5
#endif

#define CHUNK (64 << 10)

static uint64_t BUF_SIZE = 1 << 20;

/* Byte @i of the pattern's period, 0 <= @i < BUF_SIZE. */
static unsigned char pattern_at(uint64_t i)
{
	return (i * 131 + (i >> 8) * 7 + (i >> 16) * 29) & 0xff;
}

static unsigned char pattern(uint64_t off)
{
	return pattern_at(off % BUF_SIZE);
}

/* Bytes [from, to) of the pattern's period, to <= BUF_SIZE. */
static void fill_pattern(unsigned char *p, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++)
		p[i] = pattern_at(i);
}

/* The receiver's copy of one period of the pattern: its first @expect_len
 * bytes are filled, the rest as the stream first reaches them.
 */
static unsigned char *expect;
static uint64_t expect_len;

/* Whether the @len bytes at @p, read at stream offset @off, are the
 * pattern's: memcmp() against the same bytes of its period, split where
 * the read wraps at the period's end (more than once for a small BUF).
 */
static int matches(const unsigned char *p, uint64_t off, size_t len)
{
	uint64_t i = off % BUF_SIZE;

	while (len) {
		size_t n = len;

		if (n > BUF_SIZE - i)
			n = BUF_SIZE - i;
		if (i + n > expect_len) {
			fill_pattern(expect, expect_len, i + n);
			expect_len = i + n;
		}
		if (memcmp(p, expect + i, n))
			return 0;
		p += n;
		len -= n;
		i = 0;
	}
	return 1;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static struct sockaddr_in addr_of(const char *ip, const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	a.sin_port = htons(atoi(port));
	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		fprintf(stderr, "bad address %s\n", ip);
		exit(2);
	}
	return a;
}

static int do_recv(const char *ip, const char *port)
{
	struct sockaddr_in a = addr_of(ip, port);
	static unsigned char buf[CHUNK];
	uint64_t off = 0;
	int one = 1, l, c;
	ssize_t n;

	/* Without it (BUF 0, no memory) every byte goes to the loop below. */
	if (BUF_SIZE)
		expect = malloc(BUF_SIZE);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		die("socket");
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1))
		die("bind/listen");
	/* The caller waits for this line before it starts the sender. */
	printf("listening\n");
	fflush(stdout);
	c = accept(l, NULL, NULL);
	if (c < 0)
		die("accept");
	while ((n = read(c, buf, sizeof(buf))) > 0) {
		if (expect && matches(buf, off, n)) {
			off += n;
			continue;
		}
		/* A wrong byte: find the first one, byte by byte. */
		for (ssize_t k = 0; k < n; k++) {
			if (buf[k] != pattern(off + k)) {
				printf("wrong byte at offset %llu: %u, expected %u\n",
				       (unsigned long long)(off + k), buf[k],
				       pattern(off + k));
				return 1;
			}
		}
		off += n;
	}
	if (n < 0)
		die("read");
	printf("received %llu bytes, byte-exact\n", (unsigned long long)off);
	return 0;
}

static int connect_to(const char *ip, const char *port)
{
	struct sockaddr_in a = addr_of(ip, port);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		die("socket");
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	return fd;
}

/* io_uring SEND_ZC, one send in flight at a time so the stream keeps its
 * order; notifications may trail behind.
 */
static int send_uring(int fd, unsigned char *buf, uint64_t total, int fixed)
{
	uint64_t off = 0, sends = 0, notifs = 0, more = 0;
	struct io_uring ring;
	struct iovec iov = { buf, BUF_SIZE };
	int ret;

	ret = io_uring_queue_init(32, &ring, 0);
	if (ret) {
		errno = -ret;
		die("io_uring_queue_init");
	}
	if (fixed) {
		ret = io_uring_register_buffers(&ring, &iov, 1);
		if (ret) {
			errno = -ret;
			die("io_uring_register_buffers");
		}
	}
	while (off < total || notifs < more) {
		struct io_uring_cqe *cqe;
		int done = 0;

		if (off < total) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			uint64_t i = off % BUF_SIZE;
			size_t len = CHUNK;

			if (len > BUF_SIZE - i)
				len = BUF_SIZE - i;
			if (len > total - off)
				len = total - off;
			if (fixed)
				io_uring_prep_send_zc_fixed(sqe, fd, buf + i, len, 0, 0, 0);
			else
				io_uring_prep_send_zc(sqe, fd, buf + i, len, 0, 0);
			sqe->user_data = 1;
			ret = io_uring_submit(&ring);
			if (ret != 1) {
				errno = ret < 0 ? -ret : EIO;
				die("io_uring_submit");
			}
			sends++;
		} else {
			done = 1;
		}
		/* Until this send's result (or, at the end, every notification). */
		while (!done || (off >= total && notifs < more)) {
			ret = io_uring_wait_cqe(&ring, &cqe);
			if (ret) {
				errno = -ret;
				die("io_uring_wait_cqe");
			}
			if (cqe->flags & IORING_CQE_F_NOTIF) {
				notifs++;
			} else {
				if (cqe->res < 0) {
					errno = -cqe->res;
					die("send_zc");
				}
				if (cqe->flags & IORING_CQE_F_MORE)
					more++;
				off += cqe->res;
				done = 1;
			}
			io_uring_cqe_seen(&ring, cqe);
			if (off >= total && notifs >= more)
				break;
		}
	}
	printf("sent %llu bytes in %llu sends, %llu of %llu notifications\n",
	       (unsigned long long)off, (unsigned long long)sends,
	       (unsigned long long)notifs, (unsigned long long)more);
	io_uring_queue_exit(&ring);
	return 0;
}

/* Reads MSG_ZEROCOPY completions; returns how many sends they cover. */
static uint64_t reap_zerocopy(int fd)
{
	char control[128];
	uint64_t n = 0;

	for (;;) {
		struct msghdr msg = { .msg_control = control,
				      .msg_controllen = sizeof(control) };
		struct sock_extended_err *ee;
		struct cmsghdr *cm;

		if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
			if (errno == EAGAIN)
				return n;
			die("recvmsg(MSG_ERRQUEUE)");
		}
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			ee = (struct sock_extended_err *)CMSG_DATA(cm);
			if (ee->ee_origin == SO_EE_ORIGIN_ZEROCOPY && !ee->ee_errno)
				n += ee->ee_data - ee->ee_info + 1;
		}
	}
}

static int send_msg(int fd, unsigned char *buf, uint64_t total, int zerocopy)
{
	uint64_t off = 0, sends = 0, completed = 0;
	int one = 1;
	time_t end;

	if (zerocopy && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
		die("setsockopt(SO_ZEROCOPY)");
	while (off < total) {
		uint64_t i = off % BUF_SIZE;
		size_t len = CHUNK;
		ssize_t n;

		if (len > BUF_SIZE - i)
			len = BUF_SIZE - i;
		if (len > total - off)
			len = total - off;
		n = send(fd, buf + i, len, zerocopy ? MSG_ZEROCOPY : 0);
		if (n < 0 && errno == ENOBUFS) {
			/* optmem full of pending completions: take some. */
			struct pollfd p = { .fd = fd };

			poll(&p, 1, 100);
			completed += reap_zerocopy(fd);
			continue;
		}
		if (n < 0)
			die("send(MSG_ZEROCOPY)");
		off += n;
		if (!zerocopy)
			continue;
		sends++;
		completed += reap_zerocopy(fd);
	}
	end = time(NULL) + 60;
	while (completed < sends && time(NULL) < end) {
		struct pollfd p = { .fd = fd };

		poll(&p, 1, 100);
		completed += reap_zerocopy(fd);
	}
	printf("sent %llu bytes in %llu sends, %llu of %llu notifications\n",
	       (unsigned long long)off, (unsigned long long)sends,
	       (unsigned long long)completed, (unsigned long long)sends);
	return completed == sends ? 0 : 1;
}

int main(int argc, char **argv)
{
	unsigned char *buf;
	uint64_t total;
	int fd, ret;

	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "recv")) {
		if (argc == 5)
			BUF_SIZE = strtoull(argv[4], NULL, 0);
		return do_recv(argv[2], argv[3]);
	}
	if ((argc != 6 && argc != 7) || strcmp(argv[1], "send")) {
		fprintf(stderr, "usage: %s recv ADDR PORT [BUF] | send uring-fixed|uring|msg|copy ADDR PORT BYTES [BUF]\n",
			argv[0]);
		return 2;
	}
	if (argc == 7)
		BUF_SIZE = strtoull(argv[6], NULL, 0);
	if (!BUF_SIZE || BUF_SIZE % 4096) {
		fprintf(stderr, "BUF must be a non-zero multiple of 4096\n");
		return 2;
	}
	total = strtoull(argv[5], NULL, 0);
	buf = aligned_alloc(4096, BUF_SIZE);
	if (!buf)
		die("aligned_alloc");
	fill_pattern(buf, 0, BUF_SIZE);
	fd = connect_to(argv[3], argv[4]);
	if (!strcmp(argv[2], "uring-fixed"))
		ret = send_uring(fd, buf, total, 1);
	else if (!strcmp(argv[2], "uring"))
		ret = send_uring(fd, buf, total, 0);
	else if (!strcmp(argv[2], "msg"))
		ret = send_msg(fd, buf, total, 1);
	else if (!strcmp(argv[2], "copy"))
		ret = send_msg(fd, buf, total, 0);
	else
		return fprintf(stderr, "unknown mode %s\n", argv[2]), 2;
	if (close(fd))
		die("close");
	return ret;
}
