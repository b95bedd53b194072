// SPDX-License-Identifier: GPL-2.0

#include <linux/slab.h>

/*
 * kmalloc() for a qdisc's flows (kernel::flow_table): through the macro,
 * so that allocation profiling tags them as it tags any kmalloc() (with
 * CONFIG_RUST_INLINE_HELPERS, one tag in each object that allocates).
 */
__rust_helper void *rust_helper_kmalloc_flow(size_t size, gfp_t flags)
{
	return kmalloc(size, flags);
}
