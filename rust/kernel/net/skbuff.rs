// SPDX-License-Identifier: GPL-2.0

//! Socket buffers.
//!
//! C header: [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h)

use crate::bindings;
use core::{marker::PhantomData, ptr::NonNull};

/// An owned `struct sk_buff`: the holder of one reference, given back with
/// `kfree_skb()` when dropped (a packet not sent is a drop); the paths that
/// consume packets hand them over with [`SkBuff::into_raw`].
///
/// # Invariants
///
/// `self.0` points at a valid `sk_buff` on which this value owns one
/// reference, and nothing else accesses its data and metadata meanwhile
/// (other users may only hold clones, which share the data read-only).
///
/// No method taking `&self` reads `next`, `prev` or `dev`: an skb in the
/// tree of an [`SkbTimeQueue`] is lent out by reference while its `rbnode`
/// overlays those fields.
pub struct SkBuff(NonNull<bindings::sk_buff>);

// SAFETY: An owned skb may be handed to and freed from any context and
// thread; the kernel does so all the time (e.g. freed in softirq).
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// Takes ownership of `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must be a valid `sk_buff` whose reference the caller gives to
    /// the new value, with no other user of its metadata.
    #[inline]
    pub unsafe fn from_raw(ptr: NonNull<bindings::sk_buff>) -> Self {
        // INVARIANT: The caller hands over the reference.
        Self(ptr)
    }

    /// Gives up ownership: the caller becomes responsible for the reference.
    #[inline]
    pub fn into_raw(self) -> NonNull<bindings::sk_buff> {
        let ptr = self.0;
        core::mem::forget(self);
        ptr
    }

    #[inline]
    pub(crate) fn as_ptr(&self) -> *mut bindings::sk_buff {
        self.0.as_ptr()
    }

    /// Returns `true` if the data is shared with a clone (`skb_cloned()`).
    #[inline]
    pub fn is_cloned(&self) -> bool {
        // SAFETY: The pointer is valid (type invariant).
        unsafe { bindings::skb_cloned(self.as_ptr()) }
    }
}

/// Why a packet was dropped (`enum skb_drop_reason`), as seen by
/// `perf`/`dropwatch`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// A band of `fq` was full (`SKB_DROP_REASON_FQ_BAND_LIMIT`).
    FqBandLimit,
    /// The timestamp was beyond the `fq` horizon
    /// (`SKB_DROP_REASON_FQ_HORIZON_LIMIT`).
    FqHorizonLimit,
    /// A flow of `fq` was full (`SKB_DROP_REASON_FQ_FLOW_LIMIT`).
    FqFlowLimit,
    /// The qdisc had no room for the packet's flow
    /// (`SKB_DROP_REASON_QDISC_DROP`).
    QdiscDrop,
}

/// What [`SkBuff::set_ce`] did to a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CeMark {
    /// Its ECN field was ECT(0) or ECT(1) and is now CE.
    Marked,
    /// Its ECN field is not one to mark (Not-ECT, already CE, or no IP
    /// header): `INET_ECN_set_ce()` leaves it, in C as here.
    Unchanged,
    /// It is ECN-capable but was not marked: it has other users, or its
    /// shared header could not be made private.
    Refused,
}

impl DropReason {
    #[inline]
    pub(crate) fn as_raw(self) -> bindings::skb_drop_reason {
        match self {
            Self::FqBandLimit => bindings::skb_drop_reason_SKB_DROP_REASON_FQ_BAND_LIMIT,
            Self::FqHorizonLimit => bindings::skb_drop_reason_SKB_DROP_REASON_FQ_HORIZON_LIMIT,
            Self::FqFlowLimit => bindings::skb_drop_reason_SKB_DROP_REASON_FQ_FLOW_LIMIT,
            Self::QdiscDrop => bindings::skb_drop_reason_SKB_DROP_REASON_QDISC_DROP,
        }
    }
}

/// Length of the private part of the qdisc control block
/// (`QDISC_CB_PRIV_LEN`).
pub const QDISC_CB_PRIV_LEN: usize = bindings::QDISC_CB_PRIV_LEN as usize;

/// A qdisc's per-packet state, kept in the private part of the qdisc
/// control block (`qdisc_skb_cb(skb)->data`), as C's qdiscs keep
/// `struct fq_skb_cb` there. Declare one with [`qdisc_cb!`](crate::qdisc_cb).
///
/// # Safety
///
/// The type fits in [`QDISC_CB_PRIV_LEN`] bytes with an alignment of at
/// most 8, every bit pattern of its size is a valid value (the block holds
/// whatever the last user wrote), and a value has no padding (its bytes
/// are read back as such).
pub unsafe trait QdiscCb: Copy {}

/// Integer types and arrays of them: every bit pattern valid, no padding.
/// For the fields of a [`qdisc_cb!`](crate::qdisc_cb) struct.
///
/// # Safety
///
/// As stated: all bit patterns valid, no padding bytes.
pub unsafe trait CbField: Copy {}

macro_rules! cb_fields {
    ($($t:ty),*) => { $(
        // SAFETY: A primitive integer: every bit pattern valid, no padding.
        unsafe impl CbField for $t {}
    )* };
}
cb_fields!(u8, u16, u32, u64, i8, i16, i32, i64);
// SAFETY: An array of such fields has no padding between its elements
// (size is a multiple of alignment) and is valid for every bit pattern.
unsafe impl<T: CbField, const N: usize> CbField for [T; N] {}

/// Declares a `#[repr(C)]` struct of integer fields (or arrays of them) as
/// a [`QdiscCb`](crate::net::skbuff::QdiscCb). The build fails if it has
/// padding (name it, e.g. `_pad: [u8; 7]`) or does not fit in the control
/// block.
///
/// # Examples
///
/// ```ignore
/// kernel::qdisc_cb! {
///     /// `struct fq_skb_cb`.
///     struct FqSkbCb {
///         time_to_send: u64,
///         band: u8,
///         _pad: [u8; 7],
///     }
/// }
/// ```
#[macro_export]
macro_rules! qdisc_cb {
    ($(#[$m:meta])* $vis:vis struct $name:ident {
        $($(#[$fm:meta])* $fvis:vis $field:ident : $ty:ty),* $(,)?
    }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy)]
        $vis struct $name {
            $($(#[$fm])* $fvis $field: $ty),*
        }

        const _: () = {
            const fn field<T: $crate::net::skbuff::CbField>() -> usize {
                ::core::mem::size_of::<T>()
            }
            assert!(
                ::core::mem::size_of::<$name>() == 0 $(+ field::<$ty>())*,
                "qdisc_cb!: the struct has padding; name it as a field"
            );
            assert!(
                ::core::mem::size_of::<$name>() <= $crate::net::skbuff::QDISC_CB_PRIV_LEN
                    && ::core::mem::align_of::<$name>() <= 8,
                "qdisc_cb!: larger than QDISC_CB_PRIV_LEN or aligned beyond 8"
            );
        };

        // SAFETY: `repr(C)` with fields that are `CbField`s (integers or
        // arrays of them: every bit pattern valid), no padding (the size
        // is the sum of the fields') and within the block's size and
        // alignment, all checked above at build time.
        unsafe impl $crate::net::skbuff::QdiscCb for $name {}
    };
}

impl SkBuff {
    /// Returns the packet priority (`skb->priority`).
    #[inline]
    pub fn priority(&self) -> u32 {
        // SAFETY: The pointer is valid (type invariant); `priority` is a
        // plain field of the `headers` group.
        unsafe {
            (*self.as_ptr())
                .__bindgen_anon_4
                .__bindgen_anon_1
                .as_ref()
                .priority
        }
    }

    /// Returns the departure time (`skb->tstamp`), 0 if none.
    #[inline]
    pub fn tstamp(&self) -> u64 {
        // SAFETY: The pointer is valid (type invariant); `tstamp` is the
        // `ktime_t` member of its union.
        unsafe { (*self.as_ptr()).__bindgen_anon_2.tstamp as u64 }
    }

    /// Sets the departure time (`skb->tstamp`).
    #[inline]
    pub fn set_tstamp(&mut self, tstamp: u64) {
        // SAFETY: The pointer is valid and the metadata ours (invariant).
        unsafe { (*self.as_ptr()).__bindgen_anon_2.tstamp = tstamp as bindings::ktime_t };
    }

    /// Returns the flow hash, computing it if needed (`skb_get_hash()`).
    #[inline]
    pub fn get_hash(&mut self) -> u32 {
        let skb = self.as_ptr();
        // SAFETY: The pointer is valid and the metadata ours (invariant);
        // `l4_hash`, `sw_hash` and `hash` are plain members of the `headers`
        // group. As `skb_get_hash()` does inline, only an skb without a
        // recorded hash goes to `__skb_get_hash_net()`, which records one
        // (a NULL netns is what `skb_get_hash()` passes).
        unsafe {
            let h = (*skb).__bindgen_anon_4.__bindgen_anon_1.as_ref();
            if h.l4_hash() == 0 && h.sw_hash() == 0 {
                bindings::__skb_get_hash_net(core::ptr::null(), skb);
            }
            (*skb).__bindgen_anon_4.__bindgen_anon_1.as_ref().hash
        }
    }

    /// The segments the packet counts for in statistics: `gso_segs` for a
    /// GSO packet, else 1 (as `bstats_update()` counts).
    #[inline]
    pub fn stats_segs(&self) -> u32 {
        let skb = self.as_ptr();
        // SAFETY: The pointer is valid (type invariant) and every skb has
        // its shared info at `head + end` (`skb_shinfo()`; with 64-bit
        // longs `end` is an offset, `NET_SKBUFF_DATA_USES_OFFSET`).
        #[cfg(CONFIG_64BIT)]
        let shinfo = unsafe {
            (*skb)
                .head
                .add((*skb).end as usize)
                .cast::<bindings::skb_shared_info>()
        };
        // SAFETY: As above; `skb_shinfo()` works on any valid skb.
        #[cfg(not(CONFIG_64BIT))]
        let shinfo = unsafe { bindings::skb_shinfo(skb) };
        // SAFETY: `shinfo` points at the skb's valid shared info.
        let (gso_size, gso_segs) = unsafe { ((*shinfo).gso_size, (*shinfo).gso_segs) };
        if gso_size != 0 {
            u32::from(gso_segs)
        } else {
            1
        }
    }

    /// Detaches the skb from its socket (`skb_orphan()`).
    #[inline]
    pub fn orphan(&mut self) {
        // SAFETY: The pointer is valid and the metadata ours (invariant).
        // Without a destructor `skb_orphan()` has nothing to do.
        unsafe {
            if (*self.as_ptr())
                .__bindgen_anon_3
                .__bindgen_anon_1
                .destructor
                .is_some()
            {
                bindings::skb_orphan(self.as_ptr());
            }
        }
    }

    /// Returns `true` if the skb has other users than its owner
    /// (`skb_shared()`: `skb->users` above 1, e.g. pktgen's `clone_skb`
    /// sending one skb again and again).
    #[inline]
    pub fn is_shared(&self) -> bool {
        // SAFETY: The skb is valid (type invariant); `users` is an atomic
        // that other holders change, so it is read once, volatile, not
        // through a reference.
        let users = unsafe {
            core::ptr::read_volatile(core::ptr::addr_of!((*self.as_ptr()).users.refs.counter))
        };
        users != 1
    }

    /// Marks the packet Congestion Experienced if it is ECN-capable
    /// (`INET_ECN_set_ce()`), and says what became of it.
    ///
    /// A header shared with a clone is first made private
    /// (`pskb_expand_head()`, as `skb_ensure_writable()` does); if that
    /// fails the packet is not marked. TCP's clones do not share their
    /// headers (`skb->nohdr`), so they are marked in place, as C does. An
    /// ECN-capable skb with other users (`skb_shared()`), whose header
    /// `pskb_expand_head()` must not replace, is not marked
    /// ([`CeMark::Refused`]); C marks it in place under the other users'
    /// feet.
    #[inline]
    pub fn set_ce(&mut self) -> CeMark {
        let skb = self.as_ptr();
        // SAFETY: The pointer is valid (type invariant); the helper only
        // reads the header, which other users may read too.
        if !unsafe { bindings::skb_ecn_settable(skb) } {
            // `INET_ECN_set_ce()` would write nothing: no copy, no mark.
            return CeMark::Unchanged;
        }
        if self.is_shared() {
            return CeMark::Refused;
        }
        // SAFETY: The pointer is valid and we own the skb (invariant).
        if unsafe { bindings::skb_header_cloned(skb) } {
            let gfp = crate::alloc::flags::GFP_ATOMIC.as_raw();
            // SAFETY: As above, and the skb has no other user (checked
            // above): a header shared with clones is replaced by a private
            // copy of the head, the clones keeping the old one.
            if unsafe { bindings::pskb_expand_head(skb, 0, 0, gfp) } != 0 {
                return CeMark::Refused;
            }
        }
        // SAFETY: The pointer is valid and, with the header not shared
        // (checked above), the bytes `INET_ECN_set_ce()` writes (the IP
        // header's ECN field, after checking it lies inside the linear
        // data) are ours.
        if unsafe { bindings::INET_ECN_set_ce(skb) != 0 } {
            CeMark::Marked
        } else {
            CeMark::Unchanged
        }
    }

    /// Returns the qdisc's per-packet state in the control block.
    #[inline]
    pub fn qdisc_cb<C: QdiscCb>(&self) -> &C {
        // SAFETY: `qdisc_cb_ptr()` is valid for `QDISC_CB_PRIV_LEN` bytes,
        // 8-aligned, for as long as the skb; `C` fits there, is valid for
        // any bytes and aligned to at most 8 (`QdiscCb`).
        unsafe { &*self.qdisc_cb_ptr().cast::<C>() }
    }

    /// Returns the qdisc's per-packet state in the control block, writable.
    #[inline]
    pub fn qdisc_cb_mut<C: QdiscCb>(&mut self) -> &mut C {
        // SAFETY: As for `qdisc_cb`; the metadata is ours (type
        // invariant), and what is written is a `C`, without padding.
        unsafe { &mut *self.qdisc_cb_ptr().cast::<C>() }
    }

    /// `qdisc_skb_cb(skb)->data`: the qdisc's part of `skb->cb`.
    #[inline]
    fn qdisc_cb_ptr(&self) -> *mut u8 {
        const OFFSET: usize = core::mem::offset_of!(bindings::qdisc_skb_cb, data);
        const CB: usize = core::mem::offset_of!(bindings::sk_buff, cb);
        const _: () = assert!(
            OFFSET + QDISC_CB_PRIV_LEN <= core::mem::size_of::<[core::ffi::c_char; 48]>()
                && (CB + OFFSET) % 8 == 0
                && core::mem::align_of::<bindings::sk_buff>() >= 8
        );
        // SAFETY: The pointer is valid (type invariant); `cb` is 48 bytes,
        // which hold a `struct qdisc_skb_cb` (checked above).
        unsafe {
            core::ptr::addr_of_mut!((*self.as_ptr()).cb)
                .cast::<u8>()
                .add(OFFSET)
        }
    }

    /// The length `tc` accounts for the packet (`qdisc_pkt_len()`).
    #[inline]
    pub fn qdisc_pkt_len(&self) -> u32 {
        // SAFETY: The pointer is valid (type invariant); `cb` holds a
        // `struct qdisc_skb_cb` while a qdisc has the packet.
        unsafe {
            (*core::ptr::addr_of!((*self.as_ptr()).cb).cast::<bindings::qdisc_skb_cb>())
                .__bindgen_anon_1
                .pkt_len
        }
    }

    /// Returns the socket the packet belongs to, if any (`skb->sk`).
    #[inline]
    pub fn sock(&self) -> Option<SockRef<'_>> {
        // SAFETY: The pointer is valid (type invariant).
        let sk = unsafe { (*self.as_ptr()).sk };
        NonNull::new(sk).map(|sk| SockRef {
            sk,
            _p: core::marker::PhantomData,
        })
    }
}

/// Socket states (`include/net/tcp_states.h`) as [`SockRef::state`]
/// returns them; other protocols use them too (an unconnected UDP socket is
/// in `CLOSE`).
pub mod tcp_state {
    use crate::bindings;

    /// `TCP_CLOSE`.
    pub const CLOSE: u32 = bindings::TCP_CLOSE;
    /// `TCP_LISTEN`.
    pub const LISTEN: u32 = bindings::TCP_LISTEN;
    /// `TCP_NEW_SYN_RECV`: a request socket.
    pub const NEW_SYN_RECV: u32 = bindings::TCP_NEW_SYN_RECV;
}

/// The socket of a packet, as a qdisc sees it.
///
/// # Invariants
///
/// `sk` is the socket of a packet we hold; the packet keeps it alive
/// (through its destructor's reference) for `'a`.
#[derive(Clone, Copy)]
pub struct SockRef<'a> {
    sk: NonNull<bindings::sock>,
    _p: core::marker::PhantomData<&'a SkBuff>,
}

impl SockRef<'_> {
    /// Returns the socket's address, which identifies it while it lives.
    #[inline]
    pub fn addr(&self) -> usize {
        self.sk.as_ptr() as usize
    }

    /// `sk->sk_state`, a field of every kind of socket (full, request,
    /// timewait); C declares it volatile.
    #[inline]
    fn state_raw(&self) -> u8 {
        // SAFETY: The socket is alive (type invariant) and `skc_state` is in
        // the `sock_common` that every socket kind begins with.
        unsafe { core::ptr::addr_of!((*self.sk.as_ptr()).__sk_common.skc_state).read_volatile() }
    }

    /// `1 << sk->sk_state`, the `TCPF_*` flag of the state (states are
    /// below 32).
    #[inline]
    fn state_flag(&self) -> u32 {
        1u32.wrapping_shl(self.state_raw().into())
    }

    /// Returns `true` for a full socket (not a request or timewait one).
    ///
    /// The per-packet accessors of this type read the fields inline, as
    /// C's `static inline` versions do, instead of calling C helpers.
    #[inline]
    pub fn is_fullsock(&self) -> bool {
        self.state_flag() & !(bindings::TCPF_TIME_WAIT | bindings::TCPF_NEW_SYN_RECV) != 0
    }

    /// Returns `true` for a full TCP socket (`sk_fullsock() && sk_is_tcp()`).
    #[inline]
    pub fn is_tcp(&self) -> bool {
        if !self.is_fullsock() {
            return false;
        }
        let sk = self.sk.as_ptr();
        // SAFETY: The socket is alive (type invariant) and full, so it is a
        // `struct sock` with all these fields; `sk_family` is read once, as
        // C's `READ_ONCE()`.
        unsafe {
            let family = core::ptr::addr_of!((*sk).__sk_common.skc_family).read_volatile();
            (family == bindings::AF_INET as u16 || family == bindings::AF_INET6 as u16)
                && (*sk).sk_type == bindings::sock_type_SOCK_STREAM as u16
                && (*sk).sk_protocol == bindings::IPPROTO_TCP as u16
        }
    }

    /// Returns the connection state (`sk->sk_state`, one of [`tcp_state`]).
    #[inline]
    pub fn state(&self) -> u32 {
        self.state_raw().into()
    }

    /// Returns the socket's hash (`sk->sk_hash`).
    #[inline]
    pub fn hash(&self) -> u32 {
        // SAFETY: The socket is alive (type invariant); `skc_hash` is in the
        // `sock_common` of every socket kind, and every bit pattern of the
        // union is a valid `u32`.
        unsafe { (*self.sk.as_ptr()).__sk_common.__bindgen_anon_2.skc_hash }
    }

    /// Returns the pacing rate in bytes/s of a full socket.
    #[inline]
    pub fn pacing_rate(&self) -> Option<u64> {
        // SAFETY: The socket is alive and full, which has the field; TCP
        // updates it concurrently, so it is read once (`READ_ONCE()`).
        self.is_fullsock().then(|| unsafe {
            core::ptr::addr_of!((*self.sk.as_ptr()).sk_pacing_rate).read_volatile() as u64
        })
    }

    /// Returns the `SO_MAX_PACING_RATE` of a full socket (`~0` if unset).
    #[inline]
    pub fn max_pacing_rate(&self) -> Option<u64> {
        // SAFETY: As for `pacing_rate()`: alive, full, read once.
        self.is_fullsock().then(|| unsafe {
            core::ptr::addr_of!((*self.sk.as_ptr()).sk_max_pacing_rate).read_volatile() as u64
        })
    }

    /// Tells a full socket that `fq` paces it (`SK_PACING_FQ`, with
    /// release ordering), so TCP stops pacing by itself.
    #[inline]
    pub fn set_pacing_status_fq(&self) {
        if !self.is_fullsock() {
            return;
        }
        // The kernel's C changes the field with `smp_store_release()` and
        // `cmpxchg()` (TCP, C sch_fq) and BPF congestion control programs
        // with plain aligned 32-bit stores (a single instruction once
        // JIT-compiled, which cannot tear): every access is of the whole
        // word, as the kernel memory model requires of a field that C
        // itself reads with `smp_load_acquire()` while such stores happen.
        // SAFETY: The socket is alive and full, which has the field: a
        // valid, aligned `u32` for as long as this reference, only ever
        // accessed as a whole word (above).
        let status = unsafe {
            core::sync::atomic::AtomicU32::from_ptr(core::ptr::addr_of_mut!(
                (*self.sk.as_ptr()).sk_pacing_status
            ))
        };
        let fq = bindings::sk_pacing_SK_PACING_FQ;
        // Release, as C sch_fq: pairs with TCP's smp_load_acquire() of it.
        if status.load(core::sync::atomic::Ordering::Relaxed) != fq {
            status.store(fq, core::sync::atomic::Ordering::Release);
        }
    }
}

/// An owner of one skb reference that an [`SkbQueue`] can hold: [`SkBuff`],
/// or a wrapper that stands for more (a qdisc's counted
/// [`Queued`](crate::net::sched::Queued)).
///
/// # Safety
///
/// A value owns one skb as [`SkBuff`] does (a valid `sk_buff`, its
/// metadata, `next` included, used by nobody else); `into_raw` gives up
/// that ownership without freeing the skb, and `from_raw` of the pointer
/// makes the same value again.
pub unsafe trait OwnedSkb {
    /// Gives up ownership: the caller becomes responsible for the reference.
    fn into_raw(self) -> NonNull<bindings::sk_buff>;

    /// Takes ownership of `ptr` back.
    ///
    /// # Safety
    ///
    /// `ptr` must come from [`OwnedSkb::into_raw`] of a value of this type,
    /// whose reference the caller hands over.
    unsafe fn from_raw(ptr: NonNull<bindings::sk_buff>) -> Self;
}

// SAFETY: `SkBuff::into_raw` and `SkBuff::from_raw` are that pair.
unsafe impl OwnedSkb for SkBuff {
    #[inline]
    fn into_raw(self) -> NonNull<bindings::sk_buff> {
        SkBuff::into_raw(self)
    }

    #[inline]
    unsafe fn from_raw(ptr: NonNull<bindings::sk_buff>) -> Self {
        // SAFETY: By the caller's promise.
        unsafe { SkBuff::from_raw(ptr) }
    }
}

/// A FIFO of owned skbs (each an `S`) linked through `skb->next`: no
/// allocation to queue, as the C qdiscs do.
///
/// # Invariants
///
/// `head` owns the first skb, each skb's `next` owns the following one and
/// `tail` points at the last (null when empty); every `next` of the last
/// skb is null. Every skb came from [`OwnedSkb::into_raw`] of an `S`.
/// `len` is the number of skbs.
pub struct SkbQueue<S: OwnedSkb = SkBuff> {
    head: *mut bindings::sk_buff,
    tail: *mut bindings::sk_buff,
    len: u32,
    _p: PhantomData<S>,
}

// SAFETY: All zeroes is two null pointers and a length of 0: the empty
// queue, which satisfies the invariants. (Lets users zero-initialise arrays
// of structures that embed a queue, in place.)
unsafe impl<S: OwnedSkb> crate::init::Zeroable for SkbQueue<S> {}

// SAFETY: The queue owns its skbs, as a `KVec<S>` would.
unsafe impl<S: OwnedSkb + Send> Send for SkbQueue<S> {}

impl<S: OwnedSkb> Default for SkbQueue<S> {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

/// Returns `skb->next` (the anonymous union of `struct sk_buff`).
///
/// # Safety
///
/// `skb` must be valid.
unsafe fn next_of(skb: *mut bindings::sk_buff) -> *mut bindings::sk_buff {
    // SAFETY: By the caller's promise; `next` is the list member.
    unsafe { (*skb).__bindgen_anon_1.__bindgen_anon_1.next }
}

/// Sets `skb->next`.
///
/// # Safety
///
/// `skb` must be valid and owned by the caller.
unsafe fn set_next(skb: *mut bindings::sk_buff, next: *mut bindings::sk_buff) {
    // SAFETY: By the caller's promise.
    unsafe { (*skb).__bindgen_anon_1.__bindgen_anon_1.next = next };
}

impl<S: OwnedSkb> SkbQueue<S> {
    /// An empty queue.
    #[inline]
    pub const fn new() -> Self {
        Self {
            head: core::ptr::null_mut(),
            tail: core::ptr::null_mut(),
            len: 0,
            _p: PhantomData,
        }
    }

    /// Returns the number of skbs queued.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Returns `true` if nothing is queued.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head.is_null()
    }

    /// The first skb, or null; it stays the queue's.
    #[inline]
    fn head_ptr(&self) -> *mut bindings::sk_buff {
        self.head
    }

    /// Calls `f` with the last skb, if any.
    #[inline]
    pub fn with_back<R>(&self, f: impl FnOnce(&S) -> R) -> Option<R> {
        Self::with_skb(self.tail, f)
    }

    #[inline]
    fn with_skb<R>(p: *mut bindings::sk_buff, f: impl FnOnce(&S) -> R) -> Option<R> {
        let p = NonNull::new(p)?;
        // SAFETY: `p` is an skb the queue owns, from an `S` (type
        // invariant); the temporary `S` is never dropped, so ownership
        // stays with us.
        let skb = core::mem::ManuallyDrop::new(unsafe { S::from_raw(p) });
        Some(f(&skb))
    }

    /// Appends `skb`.
    #[inline]
    pub fn push_back(&mut self, skb: S) {
        let p = OwnedSkb::into_raw(skb).as_ptr();
        // SAFETY: `p` is now owned by the queue; `tail`, if any, is ours.
        unsafe {
            set_next(p, core::ptr::null_mut());
            if self.tail.is_null() {
                self.head = p;
            } else {
                set_next(self.tail, p);
            }
        }
        self.tail = p;
        self.len = self.len.wrapping_add(1);
    }

    /// Inserts `skb` after every queued skb whose `key` is not greater
    /// than its own: a stable sorted insertion when the queue is sorted.
    #[inline]
    pub fn insert_sorted_by_key(&mut self, skb: S, key: impl Fn(&S) -> u64) {
        let k = key(&skb);
        let mut prev: *mut bindings::sk_buff = core::ptr::null_mut();
        let mut cur = self.head;
        while let Some(r) = Self::with_skb(cur, &key) {
            if r > k {
                break;
            }
            prev = cur;
            // SAFETY: `cur` is an skb of the queue.
            cur = unsafe { next_of(cur) };
        }
        let p = OwnedSkb::into_raw(skb).as_ptr();
        // SAFETY: `p` is now ours; `prev` and `cur` are skbs of the queue
        // (or null), adjacent, and we link `p` between them.
        unsafe {
            set_next(p, cur);
            if prev.is_null() {
                self.head = p;
            } else {
                set_next(prev, p);
            }
        }
        if cur.is_null() {
            self.tail = p;
        }
        self.len = self.len.wrapping_add(1);
    }

    /// Removes and returns the first skb.
    #[inline]
    pub fn pop_front(&mut self) -> Option<S> {
        let p = NonNull::new(self.head)?;
        // SAFETY: `p` is the queue's first skb; we unlink it and hand its
        // ownership to the caller, with `next` cleared.
        unsafe {
            self.head = next_of(p.as_ptr());
            set_next(p.as_ptr(), core::ptr::null_mut());
            if self.head.is_null() {
                self.tail = core::ptr::null_mut();
            }
            self.len = self.len.wrapping_sub(1);
            Some(S::from_raw(p))
        }
    }
}

impl<S: OwnedSkb> Drop for SkbQueue<S> {
    #[inline]
    fn drop(&mut self) {
        while let Some(skb) = self.pop_front() {
            drop(skb);
        }
    }
}

/// The skb of an [`SkbTimeQueue`] to go next, as [`SkbTimeQueue::peek`]
/// found it: its key, and for [`SkbTimeQueue::pop`] where it is.
#[derive(Clone, Copy)]
pub struct TimeQueueFront {
    key: u64,
    in_tree: bool,
}

impl TimeQueueFront {
    /// The skb's key.
    #[inline]
    pub fn key(&self) -> u64 {
        self.key
    }
}

/// Offset of `rbnode` in `struct sk_buff`.
const RBNODE_OFFSET: usize = core::mem::offset_of!(bindings::sk_buff, __bindgen_anon_1.rbnode);

/// The skb whose `rbnode` is `node` (C's `rb_to_skb()`).
#[inline]
fn rb_to_skb(node: *mut bindings::rb_node) -> *mut bindings::sk_buff {
    node.wrapping_byte_sub(RBNODE_OFFSET).cast()
}

/// `&skb->rbnode`.
#[inline]
fn skb_rbnode(skb: *mut bindings::sk_buff) -> *mut bindings::rb_node {
    skb.wrapping_byte_add(RBNODE_OFFSET).cast()
}

/// A queue of owned skbs in the order of a `u64` key (a departure time),
/// held as C's sch_fq holds a flow's packets: a FIFO through `skb->next`
/// for the skbs that come in key order, O(1) each, and an rbtree through
/// `skb->rbnode` for those that come with a key below the FIFO's tail,
/// O(log n) each, however long the queue.
///
/// The key is read by the closure each operation is given. It must give
/// the same key for an skb as long as the skb is queued, or the order is
/// lost; memory safety does not depend on it.
///
/// # Invariants
///
/// `list` holds the FIFO part. `root` is an rbtree of `tree_len` nodes,
/// each the `rbnode` of an skb that came from [`OwnedSkb::into_raw`] of an
/// `S` and is owned by this queue; `rbnode` overlays `next`, `prev` and
/// `dev`, and every skb in the tree had `skb->dev == dev` when it was
/// inserted.
pub struct SkbTimeQueue<S: OwnedSkb = SkBuff> {
    list: SkbQueue<S>,
    root: bindings::rb_root,
    dev: *mut bindings::net_device,
    tree_len: u32,
}

// SAFETY: All zeroes is an empty FIFO, an empty tree (null root) and a
// count of 0, which satisfies the invariants.
unsafe impl<S: OwnedSkb> crate::init::Zeroable for SkbTimeQueue<S> {}

// SAFETY: The queue owns its skbs, as a `KVec<S>` would; `dev` is a plain
// value put back into skbs, never dereferenced here.
unsafe impl<S: OwnedSkb + Send> Send for SkbTimeQueue<S> {}

impl<S: OwnedSkb> Default for SkbTimeQueue<S> {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

impl<S: OwnedSkb> SkbTimeQueue<S> {
    /// An empty queue.
    #[inline]
    pub const fn new() -> Self {
        Self {
            list: SkbQueue::new(),
            root: bindings::rb_root {
                rb_node: core::ptr::null_mut(),
            },
            dev: core::ptr::null_mut(),
            tree_len: 0,
        }
    }

    /// Adds `skb` (C's `flow_queue_add()`): at the FIFO's tail if the FIFO
    /// is empty or `skb` does not sort before its tail, else into the tree.
    #[inline]
    pub fn push(&mut self, skb: S, key: impl Fn(&S) -> u64) {
        let k = key(&skb);
        match self.list.with_back(&key) {
            Some(tail) if k < tail => self.insert_tree(skb, k, key),
            _ => self.list.push_back(skb),
        }
    }

    /// The out-of-order part of [`Self::push`].
    #[inline(never)]
    fn insert_tree(&mut self, skb: S, k: u64, key: impl Fn(&S) -> u64) {
        let p = OwnedSkb::into_raw(skb).as_ptr();
        // SAFETY: `p` is ours, not yet in the tree: `dev` is still its own.
        let dev = unsafe { (*p).__bindgen_anon_1.__bindgen_anon_1.__bindgen_anon_1.dev };
        if !self.root.rb_node.is_null() && dev != self.dev {
            // The tree keeps one `dev` to put back; an skb of another
            // device (never one qdisc's case) is sorted into the FIFO.
            // SAFETY: `p` came from `into_raw()` of an `S` just above.
            let skb = unsafe { S::from_raw(NonNull::new_unchecked(p)) };
            self.list.insert_sorted_by_key(skb, key);
            return;
        }
        self.dev = dev;
        let mut parent: *mut bindings::rb_node = core::ptr::null_mut();
        let mut link: *mut *mut bindings::rb_node = &mut self.root.rb_node;
        // SAFETY: Every node reached from `root` is the `rbnode` of an skb
        // this queue owns (type invariant); `link` always points at a child
        // pointer of such a node or at `root.rb_node`. The new node gets
        // C's `rb_link_node()` (parent, no children) and is then balanced
        // in by `rb_insert_color()` on our root.
        unsafe {
            while !(*link).is_null() {
                parent = *link;
                let aux = Self::with_skb(rb_to_skb(parent), &key);
                link = if k >= aux {
                    &mut (*parent).rb_right
                } else {
                    &mut (*parent).rb_left
                };
            }
            let node = skb_rbnode(p);
            (*node).__rb_parent_color = parent as usize as _;
            (*node).rb_left = core::ptr::null_mut();
            (*node).rb_right = core::ptr::null_mut();
            *link = node;
            bindings::rb_insert_color(node, &mut self.root);
        }
        self.tree_len = self.tree_len.wrapping_add(1);
    }

    /// The key of the skb at `p`, which this queue owns.
    ///
    /// # Safety
    ///
    /// `p` is an skb of this queue.
    #[inline]
    unsafe fn with_skb(p: *mut bindings::sk_buff, key: impl Fn(&S) -> u64) -> u64 {
        // SAFETY: `p` is an skb the queue owns, from an `S` (caller, type
        // invariant); the temporary `S` is never dropped, so ownership
        // stays with us. `&S` reads no field `rbnode` overlays (see
        // [`SkBuff`]).
        let skb = core::mem::ManuallyDrop::new(unsafe { S::from_raw(NonNull::new_unchecked(p)) });
        key(&skb)
    }

    /// The tree's first skb, or null.
    #[inline]
    fn tree_first(&self) -> *mut bindings::sk_buff {
        if self.root.rb_node.is_null() {
            return core::ptr::null_mut();
        }
        // SAFETY: `root` is a valid tree (type invariant).
        rb_to_skb(unsafe { bindings::rb_first(&self.root) })
    }

    /// The next skb (C's `fq_peek()`): the tree's first if its key is
    /// below the FIFO head's, else the FIFO head; and whether it is the
    /// tree's.
    #[inline]
    fn front(&self, key: &impl Fn(&S) -> u64) -> Option<(*mut bindings::sk_buff, bool)> {
        let head = self.list.head_ptr();
        let t = self.tree_first();
        if t.is_null() {
            return (!head.is_null()).then_some((head, false));
        }
        if head.is_null() {
            return Some((t, true));
        }
        // SAFETY: Both are skbs of this queue.
        let tree_first = unsafe { Self::with_skb(t, key) < Self::with_skb(head, key) };
        Some(if tree_first { (t, true) } else { (head, false) })
    }

    /// Removes and returns the skb to go next (C's `fq_erase_head()`).
    #[inline]
    pub fn pop_front(&mut self, key: impl Fn(&S) -> u64) -> Option<S> {
        let (p, in_tree) = self.front(&key)?;
        if !in_tree {
            return self.list.pop_front();
        }
        // SAFETY: `p` is in our tree: erased from it, its `dev` put back
        // and the list pointers cleared, it is handed over as the `S` it
        // came from.
        unsafe { Some(self.take_tree_skb(p)) }
    }

    /// The skb to go next (the smallest key; on a tie the FIFO's): its key
    /// and where it is, for [`Self::pop`] (C's `fq_peek()`, whose skb
    /// `fq_dequeue()` then erases without looking again).
    #[inline]
    pub fn peek(&self, key: impl Fn(&S) -> u64) -> Option<TimeQueueFront> {
        let (p, in_tree) = self.front(&key)?;
        // SAFETY: `p` is an skb of this queue (`front()`).
        let key = unsafe { Self::with_skb(p, &key) };
        Some(TimeQueueFront { key, in_tree })
    }

    /// Removes and returns the skb that [`Self::peek`] gave `front` for.
    /// Changed since, the queue gives the first skb of the part (FIFO or
    /// tree) `front` names, or of the other if that is empty: never more
    /// than order is lost.
    #[inline]
    pub fn pop(&mut self, front: TimeQueueFront) -> Option<S> {
        if !front.in_tree {
            if let Some(skb) = self.list.pop_front() {
                return Some(skb);
            }
        }
        let t = self.tree_first();
        if t.is_null() {
            return self.list.pop_front();
        }
        // SAFETY: `t` is the first skb of our tree.
        unsafe { Some(self.take_tree_skb(t)) }
    }

    /// Unlinks `p` from the tree and returns it as an `S`.
    ///
    /// # Safety
    ///
    /// `p` is an skb in this queue's tree.
    #[inline]
    unsafe fn take_tree_skb(&mut self, p: *mut bindings::sk_buff) -> S {
        // SAFETY: By the caller's promise `p`'s `rbnode` is a node of
        // `root`. Once erased, the fields it overlaid are the skb's again:
        // `dev` gets the value it had (type invariant), `next` and `prev`
        // are cleared as `skb_mark_not_on_list()` would.
        unsafe {
            bindings::rb_erase(skb_rbnode(p), &mut self.root);
            let l = &mut (*p).__bindgen_anon_1.__bindgen_anon_1;
            l.next = core::ptr::null_mut();
            l.prev = core::ptr::null_mut();
            l.__bindgen_anon_1.dev = self.dev;
            self.tree_len = self.tree_len.wrapping_sub(1);
            S::from_raw(NonNull::new_unchecked(p))
        }
    }
}

impl<S: OwnedSkb> Drop for SkbTimeQueue<S> {
    fn drop(&mut self) {
        loop {
            let t = self.tree_first();
            if t.is_null() {
                break;
            }
            // SAFETY: `t` is the first skb of our tree.
            drop(unsafe { self.take_tree_skb(t) });
        }
        // The FIFO drops its own.
    }
}

impl Drop for SkBuff {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: We own one reference (type invariant) and give it back.
        unsafe { bindings::kfree_skb(self.as_ptr()) };
    }
}
