//! Memory: device memory (`device`), pinned host memory (`pinned`), and what they share per
//! context: the stream-ordered pool (`pool`), the cache of pinned blocks (`pinned_cache`), both
//! held by `context_memory`, and the tracking of which streams used a piece of memory (`uses`,
//! rule L3).

pub mod context_memory;
pub mod device;
pub mod failed_allocation;
pub mod pinned;
pub mod pinned_cache;
pub mod pool;

pub use device::DeviceMemory;
