// SPDX-License-Identifier: GPL-2.0

//! The socket of a packet, as a qdisc sees it.

use super::SkBuff;
use crate::{
    bindings,
    sync::atomic::{Atomic, Relaxed, Release},
};
use core::ptr::NonNull;

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
    /// `TCP_TIME_WAIT`: a timewait socket (TCP sends RSTs and ACKs of
    /// them).
    pub const TIME_WAIT: u32 = bindings::TCP_TIME_WAIT;

    /// The `TCPF_*` flag of `state` (`1 << state`), for masks of states;
    /// states are below 32.
    pub const fn flag(state: u32) -> u32 {
        1 << (state & 31)
    }
}

// The fields below are read through bindgen's `struct sock`: it must be C's
// (bindgen once missed a member of `socket_lock_t` and misplaced them all).
const _: () = {
    assert!(core::mem::size_of::<bindings::sock>() == bindings::SOCK_SIZE);
    assert!(
        core::mem::offset_of!(bindings::sock, sk_pacing_status)
            == bindings::SOCK_PACING_STATUS_OFFSET
    );
};

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

impl<'a> SockRef<'a> {
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

    /// Returns the socket as a full one, if it is (`sk_fullsock()`).
    #[inline]
    pub fn as_full(&self) -> Option<FullSockRef<'a>> {
        // INVARIANT: Checked just now; a socket's kind is fixed for its
        // life (see `FullSockRef`).
        self.is_fullsock().then_some(FullSockRef(*self))
    }

    /// Returns `true` for a full TCP socket (`sk_fullsock() && sk_is_tcp()`).
    #[inline]
    pub fn is_tcp(&self) -> bool {
        self.as_full().is_some_and(|sk| sk.is_tcp())
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
        self.as_full().map(|sk| sk.pacing_rate())
    }

    /// Returns the `SO_MAX_PACING_RATE` of a full socket (`~0` if unset).
    #[inline]
    pub fn max_pacing_rate(&self) -> Option<u64> {
        self.as_full().map(|sk| sk.max_pacing_rate())
    }

    /// Tells a full socket that `fq` paces it; see
    /// [`FullSockRef::set_pacing_status_fq`].
    #[inline]
    pub fn set_pacing_status_fq(&self) {
        if let Some(sk) = self.as_full() {
            sk.set_pacing_status_fq();
        }
    }
}

/// The full socket (`sk_fullsock()`) of a packet: its fields beyond
/// `sock_common` are read with no test of its kind.
///
/// A socket's kind is fixed for its life: request sockets are made in
/// `TCP_NEW_SYN_RECV` and timewait sockets in `TCP_TIME_WAIT`, and stay
/// so, and no full socket is ever put in either state (`tcp_time_wait()`
/// makes a timewait socket and closes the full one).
///
/// # Invariants
///
/// Those of [`SockRef`], and the socket is a full `struct sock`.
#[derive(Clone, Copy)]
pub struct FullSockRef<'a>(SockRef<'a>);

impl<'a> FullSockRef<'a> {
    /// # Safety
    ///
    /// `sk` must be a full socket that a packet we hold keeps alive for
    /// `'a`.
    #[inline]
    pub(crate) unsafe fn from_raw(sk: NonNull<bindings::sock>) -> Self {
        // INVARIANT: By the caller's promise.
        Self(SockRef {
            sk,
            _p: core::marker::PhantomData,
        })
    }

    /// The socket with the accessors of every kind.
    #[inline]
    pub fn sock(&self) -> SockRef<'a> {
        self.0
    }

    /// Returns the socket's address ([`SockRef::addr`]).
    #[inline]
    pub fn addr(&self) -> usize {
        self.0.addr()
    }

    /// Returns the socket's hash ([`SockRef::hash`]).
    #[inline]
    pub fn hash(&self) -> u32 {
        self.0.hash()
    }

    /// Returns `true` for a TCP socket (`sk_is_tcp()`).
    #[inline]
    pub fn is_tcp(&self) -> bool {
        let sk = self.0.sk.as_ptr();
        // SAFETY: The socket is alive and full (type invariant), so it is a
        // `struct sock` with all these fields; `sk_family` is read once, as
        // C's `READ_ONCE()`.
        unsafe {
            let family = core::ptr::addr_of!((*sk).__sk_common.skc_family).read_volatile();
            (family == bindings::AF_INET as u16 || family == bindings::AF_INET6 as u16)
                && (*sk).sk_type == bindings::sock_type_SOCK_STREAM as u16
                && (*sk).sk_protocol == bindings::IPPROTO_TCP as u16
        }
    }

    /// Returns the pacing rate in bytes/s (`sk->sk_pacing_rate`).
    #[inline]
    pub fn pacing_rate(&self) -> u64 {
        // SAFETY: The socket is alive and full (type invariant), which has
        // the field; TCP updates it concurrently, so it is read once
        // (`READ_ONCE()`).
        unsafe { core::ptr::addr_of!((*self.0.sk.as_ptr()).sk_pacing_rate).read_volatile() as u64 }
    }

    /// Returns the `SO_MAX_PACING_RATE` (`~0` if unset).
    #[inline]
    pub fn max_pacing_rate(&self) -> u64 {
        // SAFETY: As for `pacing_rate()`: alive, full, read once.
        unsafe {
            core::ptr::addr_of!((*self.0.sk.as_ptr()).sk_max_pacing_rate).read_volatile() as u64
        }
    }

    /// Tells the socket that `fq` paces it (`SK_PACING_FQ`, with release
    /// ordering), so TCP stops pacing by itself.
    #[inline]
    pub fn set_pacing_status_fq(&self) {
        // The kernel's C changes the field with `smp_store_release()` and
        // `cmpxchg()` (TCP, C sch_fq) and BPF congestion control programs
        // with plain aligned 32-bit stores (a single instruction once
        // JIT-compiled, which cannot tear): every access is of the whole
        // word, as the kernel memory model requires of a field that C
        // itself reads with `smp_load_acquire()` while such stores happen.
        // SAFETY: The socket is alive and full (type invariant), which has
        // the field: a valid, aligned `u32` for as long as this reference,
        // only ever accessed as a whole word (above).
        let status = unsafe {
            Atomic::from_ptr(core::ptr::addr_of_mut!(
                (*self.0.sk.as_ptr()).sk_pacing_status
            ))
        };
        let fq = bindings::sk_pacing_SK_PACING_FQ;
        // Release, as C sch_fq: pairs with TCP's smp_load_acquire() of it.
        if status.load(Relaxed) != fq {
            status.store(fq, Release);
        }
    }
}

impl SkBuff {
    /// Returns the socket the packet belongs to, if any (`skb->sk`).
    #[inline]
    pub fn sock(&self) -> Option<SockRef<'_>> {
        self.sk_raw().map(|sk| SockRef {
            sk,
            _p: core::marker::PhantomData,
        })
    }

    /// `skb->sk`, for the types that know what kind of socket it is.
    #[inline]
    pub(crate) fn sk_raw(&self) -> Option<NonNull<bindings::sock>> {
        // SAFETY: The pointer is valid (type invariant).
        NonNull::new(unsafe { (*self.as_ptr()).sk })
    }
}
