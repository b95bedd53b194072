// SPDX-License-Identifier: GPL-2.0

//! Why a packet was dropped (`enum skb_drop_reason`).

use crate::bindings;

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
