// SPDX-License-Identifier: GPL-2.0

#include <linux/jump_label.h>

int rust_helper_static_key_count(struct static_key *key)
{
	return static_key_count(key);
}
