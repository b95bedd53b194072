// SPDX-License-Identifier: GPL-2.0

//! The hash chains of a [`FlowTable`](super::FlowTable): linear hashing.

use super::{Chains, FlowItem, Node, PTR_CHUNK};
use crate::{
    alloc::{Flags, KVVec},
    chunk_vec::ChunkVec,
    context::AllocContext,
    prelude::*,
};
use core::ptr;

impl<T: FlowItem> Chains<T> {
    /// `2^log` empty chains, allocated as `ctx` allows; `EINVAL` if `log`
    /// is 32 or more.
    pub fn new(log: u8, ctx: &impl AllocContext) -> Result<Self> {
        let flags = ctx.gfp();
        if log >= 32 {
            return Err(EINVAL);
        }
        let n = 1usize << log;
        Ok(Self {
            base: KVVec::from_elem(ptr::null_mut(), n, flags)?,
            ext: ChunkVec::new(),
            mask: n - 1,
            split: 0,
        })
    }

    /// The number of chains.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.mask + 1 + self.split
    }

    /// The head of the chain of flows whose key hashes to `h`.
    #[inline]
    pub(super) fn head_of(&mut self, h: usize) -> &mut *mut Node<T> {
        let b = h & self.mask;
        // `b < mask + 1`; if `b < split`, `h & (2 * mask + 1)` is `b` or
        // `b + mask + 1 < mask + 1 + split`: a chain either way.
        let b = if b < self.split {
            h & (self.mask << 1 | 1)
        } else {
            b
        };
        self.head(b)
    }

    /// The head of chain `b`; panics if there is no such chain.
    #[inline]
    pub(super) fn head(&mut self, b: usize) -> &mut *mut Node<T> {
        let n = self.base.len();
        if b < n {
            &mut self.base[b]
        } else {
            self.ext.get_mut(b - n)
        }
    }

    /// Undoes the last split: the last chain's flows join the chain it
    /// was split from. Returns `false` at the first chains. The heads'
    /// chunks past the last chain are freed but one, so that a table
    /// that shrinks and grows by a few flows does not allocate each time.
    ///
    /// # Safety
    ///
    /// Every node in the chains is a live node of the caller's table.
    pub(super) unsafe fn merge_one(&mut self) -> bool {
        let n = self.base.len();
        if self.split == 0 {
            if self.mask + 1 == n {
                return false;
            }
            self.mask >>= 1;
            self.split = self.mask + 1;
        }
        // INVARIANT: `split <= mask` again, and chain `last` is the one
        // `split_one()` made from chain `split`.
        self.split -= 1;
        let last = self.mask + 1 + self.split;
        let moved = core::mem::replace(self.head(last), ptr::null_mut());
        if !moved.is_null() {
            let mut tail = moved;
            // SAFETY: `moved` heads a chain of live nodes (caller), and we
            // have the table's `&mut`: no reference into one exists.
            unsafe {
                while !(*tail).hnext.is_null() {
                    tail = (*tail).hnext;
                }
                (*tail).hnext = *self.head(self.split);
            }
            *self.head(self.split) = moved;
        }
        // Heads `last..` are null: a chunk that holds only those can go.
        while self.ext.len() >= last.saturating_sub(n) + 2 * PTR_CHUNK {
            drop(self.ext.pop_chunk());
        }
        true
    }

    /// Back to the first chains, once the caller has emptied every chain
    /// (heads past the last chain were never written: null). The heads
    /// added by splits stay allocated, so that nothing is freed under
    /// the caller's lock.
    pub(super) fn rewind(&mut self) {
        self.mask = self.base.len() - 1;
        self.split = 0;
    }

    /// Splits the next chain, from enqueue (`gfp` atomic): returns `false`
    /// if no head could be had for the new chain.
    ///
    /// # Safety
    ///
    /// Every node in the chains is a live node of the caller's table.
    pub(super) unsafe fn split_one(&mut self, gfp: Flags) -> bool {
        let n = self.mask + 1;
        let new = n + self.split;
        if new - self.base.len() >= self.ext.len() {
            if self.ext.is_full() {
                return false;
            }
            let Ok(chunk) = KBox::init(pin_init::zeroed::<[*mut Node<T>; PTR_CHUNK]>(), gfp) else {
                return false;
            };
            if self.ext.push_chunk(chunk, gfp).is_err() {
                return false;
            }
        }
        let wide = self.mask << 1 | 1;
        let (mut keep, mut moved) = (ptr::null_mut(), ptr::null_mut());
        let mut cur = core::mem::replace(self.head(self.split), ptr::null_mut());
        while !cur.is_null() {
            // SAFETY: `cur` is a node of the chain (caller), so live, and
            // we have the table's `&mut` (no reference into it exists).
            let node = unsafe { &mut *cur };
            let next = node.hnext;
            if T::hash(node.key) & wide == new {
                node.hnext = moved;
                moved = cur;
            } else {
                node.hnext = keep;
                keep = cur;
            }
            cur = next;
        }
        *self.head(self.split) = keep;
        // INVARIANT: chain `new` is `mask + 1 + split`, in `ext`'s range
        // (grown above); after the split, `split <= mask` again.
        *self.head(new) = moved;
        self.split += 1;
        if self.split == n {
            self.mask = wide;
            self.split = 0;
        }
        true
    }
}
