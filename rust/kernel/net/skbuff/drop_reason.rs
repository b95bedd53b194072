// SPDX-License-Identifier: GPL-2.0

//! Why a qdisc dropped a packet (`enum qdisc_drop_reason`).
//!
//! C header: [`include/net/dropreason-qdisc.h`](srctree/include/net/dropreason-qdisc.h)

use crate::bindings;

/// Why a qdisc dropped a packet (`enum qdisc_drop_reason`), as the
/// `qdisc_drop` tracepoint shows it; the skb is then freed with
/// `SKB_DROP_REASON_QDISC_DROP` (`__tcf_kfree_skb_list()`), as
/// `perf`/`dropwatch` see it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// No more specific reason applies (`QDISC_DROP_GENERIC`).
    Generic,
    /// The qdisc's table of flows is full, with no room for the packet's
    /// flow (`QDISC_DROP_MAXFLOWS`).
    Maxflows,
    /// The packet's priority band was full (`QDISC_DROP_BAND_LIMIT`).
    BandLimit,
    /// The packet's timestamp was beyond the qdisc's horizon
    /// (`QDISC_DROP_HORIZON_LIMIT`).
    HorizonLimit,
    /// The packet's flow was full (`QDISC_DROP_FLOW_LIMIT`).
    FlowLimit,
}

impl DropReason {
    /// The reason as C names it (`enum qdisc_drop_reason`).
    #[inline]
    pub fn as_raw(self) -> bindings::qdisc_drop_reason {
        match self {
            Self::Generic => bindings::qdisc_drop_reason_QDISC_DROP_GENERIC,
            Self::Maxflows => bindings::qdisc_drop_reason_QDISC_DROP_MAXFLOWS,
            Self::BandLimit => bindings::qdisc_drop_reason_QDISC_DROP_BAND_LIMIT,
            Self::HorizonLimit => bindings::qdisc_drop_reason_QDISC_DROP_HORIZON_LIMIT,
            Self::FlowLimit => bindings::qdisc_drop_reason_QDISC_DROP_FLOW_LIMIT,
        }
    }
}
