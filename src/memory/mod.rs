//! Device memory: typed buffers and views, copies, pinned host buffers, and the caching pool.

pub mod buffer;
pub mod device_pool;
pub mod pinned;
pub mod pinned_pool;
pub mod pool;
pub mod repr;
pub mod slice;
pub mod staging;

pub use buffer::{DeviceBuffer, DeviceView, DeviceViewMut};
pub use pinned::PinnedHostBuffer;
pub use repr::{DeviceRepr, ValidAsZeroBits};
pub use slice::{use_on, DeviceSlice, DeviceSliceMut};
