// SPDX-License-Identifier: GPL-2.0

//! Why a qdisc dropped a packet (`enum qdisc_drop_reason`).

use crate::bindings;

/// Why a qdisc dropped a packet (`enum qdisc_drop_reason`, a subsystem of
/// `enum skb_drop_reason`), as seen by `perf`/`dropwatch`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// A band of `fq` was full (`QDISC_DROP_BAND_LIMIT`).
    FqBandLimit,
    /// The timestamp was beyond the `fq` horizon
    /// (`QDISC_DROP_HORIZON_LIMIT`).
    FqHorizonLimit,
    /// A flow of `fq` was full (`QDISC_DROP_FLOW_LIMIT`).
    FqFlowLimit,
    /// The qdisc dropped the packet for no more specific reason
    /// (`QDISC_DROP_GENERIC`).
    QdiscDrop,
}

impl DropReason {
    #[inline]
    pub(crate) fn as_raw(self) -> bindings::qdisc_drop_reason {
        match self {
            Self::FqBandLimit => bindings::qdisc_drop_reason_QDISC_DROP_BAND_LIMIT,
            Self::FqHorizonLimit => bindings::qdisc_drop_reason_QDISC_DROP_HORIZON_LIMIT,
            Self::FqFlowLimit => bindings::qdisc_drop_reason_QDISC_DROP_FLOW_LIMIT,
            Self::QdiscDrop => bindings::qdisc_drop_reason_QDISC_DROP_GENERIC,
        }
    }
}
