// SPDX-License-Identifier: GPL-2.0

//! What a caller holds of a flow: [`FlowMut`], [`Front`] and [`Throttled`].

use super::{FlowItem, FlowMut, FlowTable, Front, ListId, Throttled, DETACHED, THROTTLED};
use core::ops::{Deref, DerefMut};

/// Implements `Deref` for a handle.
macro_rules! handle_deref {
    ($h:ident) => {
        impl<T: FlowItem> Deref for $h<'_, T> {
            type Target = T;

            #[inline]
            fn deref(&self) -> &T {
                // SAFETY: The handle names a live node (its invariant) and
                // holds the table's `&mut`, so the node's value is
                // referenced through it only.
                unsafe { &(*self.node).val }
            }
        }
    };
}

/// Implements `DerefMut` for a handle.
macro_rules! handle_deref_mut {
    ($h:ident) => {
        impl<T: FlowItem> DerefMut for $h<'_, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                // SAFETY: As for `deref()`; `&mut self` makes it exclusive.
                unsafe { &mut (*self.node).val }
            }
        }
    };
}

handle_deref!(FlowMut);

handle_deref_mut!(FlowMut);

impl<T: FlowItem> FlowMut<'_, T> {
    /// The flow's key.
    #[inline]
    pub fn key(&self) -> usize {
        // SAFETY: Live (type invariant).
        unsafe { (*self.node).key }
    }

    /// Returns `true` if the flow is on no list and not throttled.
    #[inline]
    pub fn is_detached(&self) -> bool {
        // SAFETY: Live (type invariant).
        unsafe { (*self.node).state == DETACHED }
    }

    /// Returns `true` if the flow is throttled.
    #[inline]
    pub fn is_throttled(&self) -> bool {
        // SAFETY: Live (type invariant).
        unsafe { (*self.node).state == THROTTLED }
    }

    /// Appends the flow to list `l` if it is detached (C's
    /// `fq_flow_add_tail()` of a detached flow); `false` if it is not.
    #[inline]
    pub fn attach(&mut self, l: ListId) -> bool {
        if !self.is_detached() {
            return false;
        }
        // SAFETY: Live (type invariant), and detached: on no list and not
        // in the heap.
        unsafe { self.table.push_tail(self.node, l) };
        true
    }

    /// Takes the flow out of the throttled heap to the tail of list `l`
    /// if it is throttled (C's `fq_flow_unset_throttled()`); `false` if
    /// it is not.
    pub fn unthrottle(&mut self, l: ListId) -> bool {
        if !self.is_throttled() {
            return false;
        }
        // SAFETY: Live (type invariant) and throttled; out of the heap, it
        // is on no list.
        unsafe {
            self.table.heap_remove(self.node);
            self.table.push_tail(self.node, l);
        }
        true
    }

    /// Throttles the flow again, if it is throttled, after `f` changed it
    /// (its [`FlowItem::deadline`]): out of the heap, `f`, back in, last
    /// among the flows of its deadline as one throttled now (C's
    /// `rb_erase()` of a flow from `q->delayed`, then its insertion
    /// again). `false`, without calling `f`, if it is not throttled.
    pub fn rethrottle(&mut self, f: impl FnOnce(&mut T)) -> bool {
        if !self.is_throttled() {
            return false;
        }
        // SAFETY: Live (type invariant) and throttled. Out of the heap it
        // is on no list: detached, which its state says while `f` runs.
        unsafe {
            self.table.heap_remove(self.node);
            (*self.node).state = DETACHED;
        }
        f(self);
        // SAFETY: Live, on no list and not in the heap (above); the heap
        // has room for every flow (type invariant).
        unsafe { self.table.heap_push(self.node) };
        true
    }

    /// The table, for its shared methods (such as
    /// [`FlowTable::first_deadline`]) while the flow is held.
    #[inline]
    pub fn table(&self) -> &FlowTable<T> {
        &*self.table
    }
}

handle_deref!(Front);

handle_deref_mut!(Front);

impl<'t, T: FlowItem> Front<'t, T> {
    /// The list the flow heads.
    #[inline]
    pub fn list(&self) -> ListId {
        self.list
    }

    /// Takes the flow off the front of its list.
    #[inline]
    fn pop(&mut self) {
        // SAFETY: The first node of a list is live (type invariant), and
        // on a list, so its link is `next`.
        let next = unsafe { (*self.node).link.next };
        // INVARIANT: the list now starts at the flow's successor; the
        // flow's state is the caller's to set.
        self.table.lists[self.list.index()].first = next;
    }

    /// Moves the flow to the tail of list `to` (which may be its own).
    #[inline]
    pub fn rotate(mut self, to: ListId) {
        self.pop();
        // SAFETY: Live, off its list, not in the heap, and in the state of
        // a listed flow, which `pop()` left as it was.
        unsafe { self.table.link_tail(self.node, to) };
    }

    /// Takes the flow off its list: it becomes detached, idle.
    #[inline]
    pub fn detach(mut self) {
        self.pop();
        // SAFETY: Live (type invariant); a link field.
        // INVARIANT: on no list and not in the heap: detached.
        unsafe { (*self.node).state = DETACHED };
    }

    /// Takes the flow off its list into the throttled heap, by its
    /// [`FlowItem::deadline`] as it is now.
    #[inline]
    pub fn throttle(mut self) {
        self.pop();
        // SAFETY: Live, off its list, not in the heap (it was listed).
        unsafe { self.table.heap_push(self.node) };
    }
}

handle_deref!(Throttled);

impl<T: FlowItem> Throttled<'_, T> {
    /// Takes the flow out of the heap to the tail of list `l`.
    pub fn unthrottle(self, l: ListId) {
        // SAFETY: `heap[0]` is live and throttled (type invariants); out
        // of the heap it is on no list.
        unsafe {
            self.table.heap_remove(self.node);
            self.table.push_tail(self.node, l);
        }
    }
}
