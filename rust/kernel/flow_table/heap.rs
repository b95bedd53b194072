// SPDX-License-Identifier: GPL-2.0

//! The min-heap of throttled flows, by deadline, ties in throttling order.

use super::{FlowItem, FlowTable, Node, THROTTLED};

impl<T: FlowItem> FlowTable<T> {
    /// The heap key of `node`: deadline, then throttle order.
    ///
    /// # Safety
    ///
    /// `node` is a live node of the table in the heap (throttled).
    #[inline]
    unsafe fn heap_key(node: *mut Node<T>) -> (u64, u64) {
        // SAFETY: Live (caller), and no `&mut` to it exists while a table
        // method runs.
        let n = unsafe { &*node };
        // SAFETY: In the heap (caller): `heap_push()` wrote its link as
        // `seq` before it went in, and nothing writes `next` until it is
        // out.
        let seq = unsafe { n.link.seq };
        (n.val.deadline(), seq)
    }

    /// Puts `node` at heap position `pos < heap.len()`.
    ///
    /// # Safety
    ///
    /// `node` is a live node of the table.
    #[inline]
    unsafe fn heap_set(&mut self, pos: usize, node: *mut Node<T>) {
        *self.heap.get_mut(pos) = node;
        // SAFETY: Live (caller); a link field, which no reference covers.
        unsafe { (*node).heap_pos = pos as u32 };
    }

    /// Sifts the node at `pos < heap_len` up.
    fn heap_up(&mut self, mut pos: usize) {
        let node = *self.heap.get(pos);
        // SAFETY: `heap[..heap_len]` are live nodes of the heap (type
        // invariant), here and below.
        let key = unsafe { Self::heap_key(node) };
        while pos > 0 {
            let parent = (pos - 1) / 2;
            let p = *self.heap.get(parent);
            // SAFETY: As above.
            if unsafe { Self::heap_key(p) } <= key {
                break;
            }
            // SAFETY: As above.
            unsafe { self.heap_set(pos, p) };
            pos = parent;
        }
        // SAFETY: As above.
        unsafe { self.heap_set(pos, node) };
    }

    /// Sifts the node at `pos < heap_len` down.
    fn heap_down(&mut self, mut pos: usize) {
        let len = self.heap_len as usize;
        let node = *self.heap.get(pos);
        // SAFETY: `heap[..heap_len]` are live nodes of the heap (type
        // invariant), here and below.
        let key = unsafe { Self::heap_key(node) };
        loop {
            let l = 2 * pos + 1;
            if l >= len {
                break;
            }
            let mut c = l;
            // SAFETY: As above.
            let mut ck = unsafe { Self::heap_key(*self.heap.get(l)) };
            if l + 1 < len {
                // SAFETY: As above.
                let rk = unsafe { Self::heap_key(*self.heap.get(l + 1)) };
                if rk < ck {
                    (c, ck) = (l + 1, rk);
                }
            }
            if key <= ck {
                break;
            }
            let child = *self.heap.get(c);
            // SAFETY: As above.
            unsafe { self.heap_set(pos, child) };
            pos = c;
        }
        // SAFETY: As above.
        unsafe { self.heap_set(pos, node) };
    }

    /// Throttles `node`: into the heap.
    ///
    /// # Safety
    ///
    /// `node` is a live node of the table on no list and not in the heap.
    pub(super) unsafe fn heap_push(&mut self, node: *mut Node<T>) {
        self.seq = self.seq.wrapping_add(1);
        // SAFETY: Live (caller); link fields only.
        unsafe {
            (*node).link.seq = self.seq;
            (*node).state = THROTTLED;
        }
        // Room for every flow (type invariant), and `node` is not in yet.
        let pos = self.heap_len as usize;
        self.heap_len += 1;
        // SAFETY: Live (caller).
        unsafe { self.heap_set(pos, node) };
        // INVARIANT: sifted into place, the heap holds the throttled nodes.
        self.heap_up(pos);
    }

    /// Takes throttled `node` out of the heap (its state is the caller's
    /// to set).
    ///
    /// # Safety
    ///
    /// `node` is a live node of the table with `state == THROTTLED`.
    pub(super) unsafe fn heap_remove(&mut self, node: *mut Node<T>) {
        // SAFETY: Live (caller).
        let pos = unsafe { (*node).heap_pos } as usize;
        self.heap_len -= 1;
        let len = self.heap_len as usize;
        if pos < len {
            let last = *self.heap.get(len);
            // SAFETY: `last` was in the heap, so live (type invariant).
            unsafe { self.heap_set(pos, last) };
            self.heap_down(pos);
            // SAFETY: As above.
            let p = unsafe { (*last).heap_pos } as usize;
            self.heap_up(p);
        }
    }
}
