/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Marks of a measured region for the cache model of make bench
 * (tools/rsnet/cacheplugin): the plugin counts the data accesses and cache
 * misses of a vCPU between rsnet_cache_begin(ID) and rsnet_cache_end(ID),
 * per ID (0..4095).
 *
 * A mark is "nopl MAGIC(%rax)", which the plugin finds when it translates
 * the code, then a byte load from this module's page-aligned mark page at
 * offset ID: the load's address tells the plugin the ID, whatever the
 * compiler made of the argument. Outside the plugin a mark costs two
 * instructions and a load that hits in L1.
 */
#ifndef RSNET_CACHE_MARK_H
#define RSNET_CACHE_MARK_H

#include <linux/mm.h>
#include <linux/stringify.h>
#include <linux/types.h>

#define RSNET_CACHE_BEGIN	0x52534e42	/* "BNSR" */
#define RSNET_CACHE_END		0x52534e45	/* "ENSR" */
#define RSNET_CACHE_IDS		4096

static u8 rsnet_cache_page[PAGE_SIZE] __aligned(PAGE_SIZE);

#ifdef CONFIG_X86_64
#define rsnet_cache_mark(magic, id)					\
do {									\
	u8 __v;								\
	asm volatile("nopl " __stringify(magic) "(%%rax)\n\t"		\
		     "movb (%1), %0"					\
		     : "=q" (__v)					\
		     : "r" (&rsnet_cache_page[(id) % RSNET_CACHE_IDS])	\
		     : "memory");					\
} while (0)
#else
#define rsnet_cache_mark(magic, id) do { } while (0)
#endif

#define rsnet_cache_begin(id)	rsnet_cache_mark(RSNET_CACHE_BEGIN, id)
#define rsnet_cache_end(id)	rsnet_cache_mark(RSNET_CACHE_END, id)

#endif /* RSNET_CACHE_MARK_H */
