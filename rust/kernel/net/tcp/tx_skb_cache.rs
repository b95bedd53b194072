// SPDX-License-Identifier: GPL-2.0

//! The per-socket TX skb cache hook: what may be cached ([`CachedSkb`]),
//! the socket slot ([`Sock`]), the policy ([`TxSkbCache`]), its
//! registration and the static key that gates it.

use crate::{
    bindings,
    error::{to_result, Result},
    net::skbuff::SkBuff,
    static_key::StaticKeyFalse,
    types::Opaque,
};
use core::{marker::PhantomData, mem::ManuallyDrop, ptr::NonNull};

/// A TCP TX skb fit for reuse by `tcp_stream_alloc_skb()`.
///
/// # Invariants
///
/// The skb is not cloned (no other user shares its data or shared info),
/// has no destructor, no shared-info flags (so no zerocopy state, no
/// managed or shared frags: `skb_shinfo(skb)->flags == 0`), no extensions
/// and no data beyond its linear part, which is empty.
///
/// Dropped, it is freed as consumed (`consume_skb()`): it was sent, and a
/// drop monitor (`skb:kfree_skb`) must not count it.
pub struct CachedSkb(ManuallyDrop<SkBuff>);

impl Drop for CachedSkb {
    fn drop(&mut self) {
        // SAFETY: `drop` runs once and nothing uses `self.0` after it.
        unsafe { ManuallyDrop::take(&mut self.0) }.consume();
    }
}

impl CachedSkb {
    /// Checks that `skb`, freed by a socket's write queue, can be reused,
    /// and releases its payload; hands it back if it cannot (its
    /// extensions already released if trimming the payload failed).
    ///
    /// Refused: a clone is still in flight (it shares the shared info and
    /// the frags), a destructor is set, or the shared info carries flags
    /// (zerocopy user buffers, whose frags the skb may not hold references
    /// on: `SKBFL_MANAGED_FRAG_REFS`; frags shared with the page cache).
    ///
    /// Private: only the put adapter makes one, from the skb TCP's write
    /// queue freed. Any other skb (one a qdisc dequeued, say) was not
    /// allocated by `tcp_stream_alloc_skb()` as an fclone of TCP's size,
    /// and TCP reusing it would corrupt its fclone companion.
    fn new(skb: SkBuff) -> core::result::Result<Self, SkBuff> {
        let p = skb.as_ptr();
        // A clone still shares the shared info: not ours to reuse. Once not
        // cloned while we own the skb, nobody can clone it again. Another
        // user (`skb_get()`) would see it change under its feet.
        if skb.is_cloned() || skb.is_shared() {
            return Err(skb);
        }
        // SAFETY: `p` is valid and, not cloned, its shared info is ours.
        let (has_destructor, shinfo_flags) = unsafe {
            (
                (*p).__bindgen_anon_3.__bindgen_anon_1.destructor.is_some(),
                (*bindings::skb_shinfo(p)).flags,
            )
        };
        if has_destructor || shinfo_flags != 0 {
            return Err(skb);
        }
        // SAFETY: We own the unshared skb. Without shared-info flags its
        // frags hold page references of their own, which `pskb_trim()`
        // puts; an unshared skb without a frag list trims without
        // allocating, so it cannot fail, but is checked all the same.
        let trimmed = unsafe {
            bindings::skb_ext_reset(p);
            bindings::pskb_trim(p, 0)
        };
        if trimmed != 0 {
            return Err(skb);
        }
        // INVARIANT: Checked and emptied above.
        Ok(Self(ManuallyDrop::new(skb)))
    }

    /// Gives the skb back, e.g. to be freed.
    pub fn into_skb(self) -> SkBuff {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped or used again: the skb is taken
        // once.
        unsafe { ManuallyDrop::take(&mut this.0) }
    }

    /// Puts the skb in the state that `alloc_skb_fclone()` returns it in:
    /// no data, no headroom, and, as Linux 5.2's cache did, transmit flags
    /// and the TCP control block cleared.
    fn into_fresh(self) -> SkBuff {
        let p = self.0.as_ptr();
        // SAFETY: We own the skb, which is not cloned (type invariant), so
        // its metadata and shared info are ours to write; it is linear and
        // empty, so moving `data` back to `head` and `tail` to `data`
        // describes the same empty buffer.
        unsafe {
            (*p).data = (*p).head;
            bindings::skb_reset_tail_pointer(p);
            (*bindings::skb_shinfo(p)).tx_flags = 0;
            (*p).cb = [0; 48];
        }
        self.into_skb()
    }
}

/// A TCP socket, as the TX skb cache hooks see it.
///
/// # Invariants
///
/// References are only made by the hook adapters, for the duration of a
/// hook call, which the TCP stack makes with the socket locked: the holder
/// has exclusive access to the socket's TX state, `sk_tx_skb_cache` included.
/// `Sock` is neither `Send` nor `Sync`, so the reference cannot leave the
/// calling thread.
#[repr(transparent)]
pub struct Sock(Opaque<bindings::sock>);

impl Sock {
    /// # Safety
    ///
    /// `ptr` must be a valid socket, locked by the caller for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::sock) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's promise.
        unsafe { &*ptr.cast::<Self>() }
    }

    fn slot(&self) -> *mut *mut bindings::sk_buff {
        // SAFETY: Only computes a field address of the valid socket
        // (bindgen's `struct sock` is C's: checked in `skbuff/sock.rs`).
        unsafe { core::ptr::addr_of_mut!((*self.0.get()).sk_tx_skb_cache) }
    }

    /// Returns `true` if the socket has no cached skb.
    pub fn tx_skb_cache_is_empty(&self) -> bool {
        // SAFETY: The socket is locked by our caller (type invariant).
        unsafe { (*self.slot()).is_null() }
    }

    /// Takes the socket's cached skb, leaving the slot empty.
    pub fn tx_skb_cache_take(&self) -> Option<CachedSkb> {
        // SAFETY: The socket is locked by our caller (type invariant), and
        // the slot owns the skb it points at, which we now take over. Only
        // `tx_skb_cache_store()` fills the slot, with a `CachedSkb`, which
        // nothing changed while it sat there.
        unsafe {
            let skb = core::ptr::replace(self.slot(), core::ptr::null_mut());
            NonNull::new(skb).map(|p| CachedSkb(ManuallyDrop::new(SkBuff::from_raw(p))))
        }
    }

    /// Stores `skb` in the socket's empty slot; hands it back if the slot
    /// is taken.
    pub fn tx_skb_cache_store(&self, skb: CachedSkb) -> core::result::Result<(), CachedSkb> {
        if !self.tx_skb_cache_is_empty() {
            return Err(skb);
        }
        // SAFETY: The socket is locked (type invariant) and the slot is
        // empty; it takes over our reference, and `tcp_write_queue_purge()`
        // or the cache's `get` gives it back.
        unsafe { *self.slot() = skb.into_skb().into_raw().as_ptr() };
        Ok(())
    }
}

/// The static key that gates the hooks (`tcp_tx_skb_cache_key`).
pub fn tx_skb_cache_key() -> &'static StaticKeyFalse {
    // SAFETY: `tcp_tx_skb_cache_key` is a static defined in net/ipv4/tcp.c
    // with DEFINE_STATIC_KEY_FALSE: initialised, and alive forever.
    unsafe { StaticKeyFalse::from_raw(core::ptr::addr_of_mut!(bindings::tcp_tx_skb_cache_key)) }
}

/// The policy of a per-socket TX skb cache.
///
/// Only a [`CachedSkb`] can be handed to TCP for reuse, and the adapter
/// resets it to the state of a new skb itself, so no policy can give TCP
/// a shared, zerocopy or otherwise unfit skb.
pub trait TxSkbCache: 'static {
    /// Returns an skb for `sk` to reuse, or `None` to have a new one
    /// allocated.
    fn get(sk: &Sock) -> Option<CachedSkb>;

    /// Offered an skb the write queue freed, already uncharged from `sk`,
    /// checked fit for reuse and emptied ([`CachedSkb`]): keep it (`Ok`,
    /// e.g. in the socket's slot) or hand it back to be freed (`Err`).
    /// Whatever comes back is freed exactly once: the one offered by TCP,
    /// any other by the adapter.
    fn put(sk: &Sock, skb: CachedSkb) -> core::result::Result<(), CachedSkb>;

    /// Told that TCP freed an skb unfit for reuse (a clone in flight, a
    /// destructor, zerocopy or other shared-info state); TCP frees it.
    fn put_unfit(_sk: &Sock) {}
}

struct Adapter<T: TxSkbCache>(PhantomData<T>);

impl<T: TxSkbCache> Adapter<T> {
    /// # Safety
    ///
    /// Called by `tcp_tx_skb_cache_get()` with a valid, locked socket.
    unsafe extern "C" fn get(sk: *mut bindings::sock) -> *mut bindings::sk_buff {
        // SAFETY: The TCP stack holds the socket lock for the call.
        let sk = unsafe { Sock::from_raw(sk) };
        T::get(sk).map_or(core::ptr::null_mut(), |skb| {
            skb.into_fresh().into_raw().as_ptr()
        })
    }

    /// # Safety
    ///
    /// Called by `tcp_tx_skb_cache_put()` with a valid, locked socket and an
    /// skb whose only reference the caller gives up if we return `true`.
    unsafe extern "C" fn put(sk: *mut bindings::sock, skb: *mut bindings::sk_buff) -> bool {
        let Some(skb) = NonNull::new(skb) else {
            return false;
        };
        // SAFETY: The TCP stack holds the socket lock for the call.
        let sk = unsafe { Sock::from_raw(sk) };
        let given = skb.as_ptr();
        // SAFETY: The caller hands us its reference; if we hand the skb back
        // below, the caller keeps owning it and frees it.
        let skb = unsafe { SkBuff::from_raw(skb) };
        let skb = match CachedSkb::new(skb) {
            Ok(skb) => skb,
            Err(skb) => {
                T::put_unfit(sk);
                // The caller frees it with `__kfree_skb()`, as without a
                // cache.
                skb.into_raw();
                return false;
            }
        };
        match T::put(sk, skb) {
            Ok(()) => true,
            // The skb we were given, still with only our reference (a
            // `CachedSkb` is unshared): the caller frees it.
            Err(skb) if skb.0.as_ptr() == given => {
                skb.into_skb().into_raw();
                false
            }
            // Any other skb (the policy kept the one given and handed back
            // another, e.g. the cached one) is ours to free; the caller must
            // not free the one it gave us a second time.
            Err(skb) => {
                drop(skb);
                true
            }
        }
    }

    const OPS: bindings::tcp_tx_skb_cache_ops = bindings::tcp_tx_skb_cache_ops {
        get: Some(Self::get),
        put: Some(Self::put),
    };
}

/// A registered [`TxSkbCache`]; unregistered on drop, which also turns the
/// static key off and waits for running hooks.
///
/// # Invariants
///
/// `ops` is the table registered with `tcp_tx_skb_cache_register()`.
pub struct TxSkbCacheRegistration<T: TxSkbCache> {
    ops: &'static bindings::tcp_tx_skb_cache_ops,
    _p: PhantomData<T>,
}

// SAFETY: The registration only holds a pointer to an immutable static
// table; unregistering may happen from any thread.
unsafe impl<T: TxSkbCache> Send for TxSkbCacheRegistration<T> {}
// SAFETY: `&TxSkbCacheRegistration` allows nothing.
unsafe impl<T: TxSkbCache> Sync for TxSkbCacheRegistration<T> {}

impl<T: TxSkbCache> crate::registration::Register for TxSkbCacheRegistration<T> {
    type Args = ();

    /// Registers `T` as the cache; `EBUSY` if another one is registered.
    unsafe fn register((): ()) -> Result<Self> {
        let ops: &'static bindings::tcp_tx_skb_cache_ops = &Adapter::<T>::OPS;
        // SAFETY: `ops` is a static table of functions of the calling
        // module that stay valid until we unregister it in `drop`, which
        // our caller promises happens before the module is unloaded.
        to_result(unsafe { bindings::tcp_tx_skb_cache_register(ops) })?;
        // INVARIANT: `ops` was registered above.
        Ok(Self {
            ops,
            _p: PhantomData,
        })
    }
}

impl<T: TxSkbCache> Drop for TxSkbCacheRegistration<T> {
    fn drop(&mut self) {
        // SAFETY: `self.ops` is registered (type invariant). This turns the
        // key off and waits (synchronize_rcu()) until no hook runs.
        unsafe { bindings::tcp_tx_skb_cache_unregister(self.ops) };
    }
}
