// SPDX-License-Identifier: GPL-2.0

#include <linux/jiffies.h>

__rust_helper unsigned long rust_helper_usecs_to_jiffies(unsigned int u)
{
	return usecs_to_jiffies(u);
}
