// SPDX-License-Identifier: GPL-2.0

//! Registrations that live exactly as long as the module that made them.
//!
//! A registration (a qdisc kind, the page_pool hook, the TCP TX skb cache,
//! a sysctl table) points C at the registering module's code and statics.
//! If it outlived the module, which `core::mem::forget` or a leaked box
//! would let it do, C would call into freed memory after `rmmod`. So the
//! types' [`Register::register`] is `unsafe`, and the safe way to register
//! is [`module_registrations!`](crate::module_registrations): the module's
//! struct owns every registration, and its exit drops them, before the
//! module's memory is freed, in the order they are listed.

use crate::error::Result;

/// A registration that must be dropped before its module is unloaded.
pub trait Register: Sized {
    /// What [`Register::register`] takes, as a tuple.
    type Args;

    /// Registers with C.
    ///
    /// # Safety
    ///
    /// The returned value must be dropped before the calling module is
    /// unloaded (its code and statics freed).
    unsafe fn register(args: Self::Args) -> Result<Self>;
}

/// Declares a kernel module whose struct holds the given registrations,
/// made in the order listed when it loads and dropped in the same order
/// when it unloads; the other fields are those of
/// [`module!`](crate::prelude::module).
///
/// Each registration is `name: Type = (args...)`, where `Type` implements
/// [`Register`] and the arguments are its `Args` tuple. Arguments are
/// evaluated in safe code; only the register call itself is `unsafe`.
/// The generated `init` registers once: a second call (the module's own
/// code may call `Module::init`) fails with `EBUSY`.
/// Before `registrations`, optionally: `init: expr`, a `fn() -> Result`,
/// the module's own setup, run first; `loaded: expr`, a `fn()`, run once
/// every registration is made.
///
/// # Examples
///
/// ```ignore
/// kernel::module_registrations! {
///     type: TcpTxSkbCacheModule,
///     registrations: {
///         switch: sysctl::Registration<Switch> =
///             (Scope::InitNet, c_str!("net/ipv4"), &SWITCH, Switch),
///         cache: TxSkbCacheRegistration<TxCache> = (),
///     },
///     name: "tcp_tx_skb_cache",
///     authors: ["rsnet"],
///     description: "Per-socket TCP TX skb cache",
///     license: "GPL",
/// }
/// ```
#[macro_export]
macro_rules! module_registrations {
    (
        type: $type:ident,
        $(init: $init:expr,)?
        $(loaded: $loaded:expr,)?
        registrations: { $($field:ident: $reg:ty = $args:expr),+ $(,)? },
        $($f:tt)*
    ) => {
        struct $type {
            $($field: $reg,)+
        }

        $crate::prelude::module! {
            type: $type,
            $($f)*
        }

        impl $crate::Module for $type {
            fn init(_module: &'static $crate::ThisModule) -> $crate::error::Result<Self> {
                // `Module::init` is a safe function that the module's own
                // code could call again and forget the result of: only the
                // first call (the module loader's) registers.
                static CALLED: $crate::sync::atomic::Atomic<bool> =
                    $crate::sync::atomic::Atomic::new(false);
                if CALLED.xchg(true, $crate::sync::atomic::Full) {
                    return Err($crate::error::code::EBUSY);
                }
                $(
                    let init: fn() -> $crate::error::Result = $init;
                    init()?;
                )?
                let this = $type {
                    $($field: {
                        let args: <$reg as $crate::registration::Register>::Args = $args;
                        // SAFETY: The registration is a field of the module's
                        // struct, reachable only by the module's exit, which
                        // drops it before the module's memory is freed.
                        unsafe { <$reg as $crate::registration::Register>::register(args) }?
                    },)+
                };
                $(
                    let loaded: fn() = $loaded;
                    loaded();
                )?
                Ok(this)
            }
        }
    };
}
