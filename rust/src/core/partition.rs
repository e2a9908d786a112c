//! SM partitions as places handles live: a device's SMs split into groups (green contexts, CUDA
//! 12.4+), each a context that handles bind like any other, so that one handle's long kernels
//! cannot take the SMs another partition's handles run on (docs/handles.md, "SM partitions").
//!
//! Every handle rule holds on a partition: work runs on a stream of the partition per handle (H9),
//! stream-ordered calls never make its context current, and the calls that must make it current
//! hold it on one thread at a time (`green_context`). A partition lives while anything made on it
//! does (each holds its `Context`); the last one releases the partition's streams, events and
//! staging memory, then destroys the green context, so a detached stream is never reachable.

use crate::core::context::{self, Context};
use crate::core::error::{Error, Result};
use crate::core::green_context::{self, SplitRequest};
use crate::core::streams;
use crate::core::transfer;

pub use green_context::support;

/// One SM partition, as Java holds it.
pub struct Partition {
    ctx: Context,
}

/// The partitions of one split, and the device's SMs as the split saw them.
pub struct Partitions {
    pub parts: Vec<Partition>,
    pub device_sms: u32,
    pub min_sms: u32,
    pub remainder_sms: u32,
}

impl Partition {
    /// A context of this partition for a new handle (it keeps the partition alive).
    pub fn context(&self) -> Result<Context> {
        self.ctx.partition_owner().ok_or_else(|| Error::invalid_state("the SM partition is no longer alive"))
    }
    /// The partition's own context (its id, device, SMs).
    pub fn own_context(&self) -> &Context {
        &self.ctx
    }
    /// The SMs it holds.
    pub fn sms(&self) -> u32 {
        self.ctx.partition_sms().unwrap_or(0)
    }
}

/// Splits device `ordinal`'s SMs as `request` says (see `green_context::split`).
pub fn split(ordinal: i32, request: SplitRequest<'_>) -> Result<Partitions> {
    // Before any partition exists: what must go before a green context is destroyed.
    context::on_partition_end(streams::release_context);
    context::on_partition_end(transfer::release_staging);
    let split = green_context::split(ordinal, request)?;
    let parts = split.parts.into_iter().map(|green| Partition { ctx: Context::of_partition(&std::sync::Arc::new(green)) }).collect();
    Ok(Partitions { parts, device_sms: split.device_sms, min_sms: split.min_sms, remainder_sms: split.remainder_sms })
}
