//! The activity API: CUPTI records what the GPU and the driver did into buffers the application
//! hands it (cudarc's `cupti::result::activity`).

use std::ffi::c_void;

use super::CuptiError;
use crate::imp::cupti::sys;
use crate::imp::driver::sys as driver_sys;

/// Configures PC sampling for `ctx`.
///
/// # Safety
/// `ctx` must be live and `config` valid.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut config: sys::CUpti_ActivityPCSamplingConfig = unsafe { std::mem::zeroed() };
/// config.size = std::mem::size_of_val(&config) as u32;
/// // SAFETY: a live context and a sized configuration.
/// if let Err(e) = unsafe { activity::configure_pc_sampling(ctx, &mut config) } {
///     // The legacy PC-sampling activity is gone on recent GPUs (the H100 answers
///     // CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED): CUPTI's PC-sampling API replaces it.
///     eprintln!("legacy PC sampling: {e:?}");
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn configure_pc_sampling(
    ctx: driver_sys::CUcontext,
    config: *mut sys::CUpti_ActivityPCSamplingConfig,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityConfigurePCSampling(ctx, config) }.result()
}

/// Configures `count` unified-memory counters.
///
/// # Safety
/// `config` must point to `count` configurations.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut config: sys::CUpti_ActivityUnifiedMemoryCounterConfig = unsafe { std::mem::zeroed() };
/// // SAFETY: one configuration.
/// unsafe { activity::configure_unified_memory_counter(&mut config, 1) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn configure_unified_memory_counter(
    config: *mut sys::CUpti_ActivityUnifiedMemoryCounterConfig,
    count: u32,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityConfigureUnifiedMemoryCounter(config, count) }.result()
}

/// Stops recording activities of `kind`.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::enable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)?;
/// activity::disable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn disable(kind: sys::CUpti_ActivityKind) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityDisable(kind) }.result()
}

/// Stops recording activities of `kind` in `context`.
///
/// # Safety
/// `context` must be live.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// // SAFETY: a live context.
/// unsafe { activity::disable_context(ctx, sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn disable_context(context: driver_sys::CUcontext, kind: sys::CUpti_ActivityKind) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityDisableContext(context, kind) }.result()
}

/// Starts recording activities of `kind`.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::enable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)?; // records every kernel
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn enable(kind: sys::CUpti_ActivityKind) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnable(kind) }.result()
}

/// Records synchronization for every sync call, not only the blocking ones (1 on, 0 off).
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::enable_all_sync_records(1)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn enable_all_sync_records(enable: u8) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableAllSyncRecords(enable) }.result()
}

/// Records where memory allocations come from (1 on, 0 off).
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::enable_allocation_source(1)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn enable_allocation_source(enable: u8) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableAllocationSource(enable) }.result()
}

/// Enables `kind` and dumps the records of what already exists.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::enable_and_dump(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_DEVICE)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn enable_and_dump(kind: sys::CUpti_ActivityKind) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableAndDump(kind) }.result()
}

/// Starts recording activities of `kind` in `context`.
///
/// # Safety
/// `context` must be live.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// // SAFETY: a live context.
/// unsafe { activity::enable_context(ctx, sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn enable_context(context: driver_sys::CUcontext, kind: sys::CUpti_ActivityKind) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityEnableContext(context, kind) }.result()
}

/// Records device-side graph launches (1 on, 0 off).
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::enable_device_graph(1)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn enable_device_graph(enable: u8) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableDeviceGraph(enable) }.result()
}

/// Records (1) or skips (0) one driver API call.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::enable_driver_api(sys::CUpti_driver_api_trace_cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel as sys::CUpti_CallbackId, 1)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn enable_driver_api(cbid: sys::CUpti_CallbackId, enable: u8) -> Result<(), CuptiError> {
    // SAFETY: plain values.
    unsafe { sys::cuptiActivityEnableDriverApi(cbid, enable) }.result()
}

/// Uses hardware tracing where the device has it (1 on, 0 off).
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// if let Err(e) = activity::enable_hw_trace(1) {
///     eprintln!("hardware-based tracing is not available here: {e:?}"); // e.g. on the H100
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn enable_hw_trace(enable: u8) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableHWTrace(enable) }.result()
}

/// Records kernel queue and submit timestamps (1 on, 0 off).
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::enable_latency_timestamps(1)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn enable_latency_timestamps(enable: u8) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableLatencyTimestamps(enable) }.result()
}

/// Records kernel launch attributes (1 on, 0 off).
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::enable_launch_attributes(1)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn enable_launch_attributes(enable: u8) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableLaunchAttributes(enable) }.result()
}

/// Records (1) or skips (0) one runtime API call.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::enable_runtime_api(0, 0)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn enable_runtime_api(cbid: sys::CUpti_CallbackId, enable: u8) -> Result<(), CuptiError> {
    // SAFETY: plain values.
    unsafe { sys::cuptiActivityEnableRuntimeApi(cbid, enable) }.result()
}

/// Flushes the records of one stream of `context`.
///
/// # Safety
/// `context` must be live.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// // SAFETY: a live context.
/// unsafe { activity::flush(ctx, 0, 0) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn flush(context: driver_sys::CUcontext, stream_id: u32, flag: u32) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityFlush(context, stream_id, flag) }.result()
}

/// Flushes every buffer to the completion callback (`flag`: `CUpti_ActivityFlag` bits).
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::flush_all(1)?; // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn flush_all(flag: u32) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityFlushAll(flag) }.result()
}

/// Flushes periodically, every `time` milliseconds (0: off).
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::flush_period(100)?; // every 100 ms
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn flush_period(time: u32) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityFlushPeriod(time) }.result()
}

/// Reads an activity attribute into `value` (`value_size` bytes).
///
/// # Safety
/// `value_size` and `value` must be valid, `value` for `*value_size` bytes.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let (mut bytes, mut size) = (0usize, std::mem::size_of::<usize>());
/// // SAFETY: the attribute is a size_t, written through `bytes`.
/// unsafe { activity::get_attribute(sys::CUpti_ActivityAttribute::CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &mut size, (&mut bytes as *mut usize).cast()) }?;
/// println!("{bytes} B device buffers");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_attribute(
    attr: sys::CUpti_ActivityAttribute,
    value_size: *mut usize,
    value: *mut c_void,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityGetAttribute(attr, value_size, value) }.result()
}

/// Moves `record` to the next record of a completed buffer (null: the first); ends with
/// `CUPTI_ERROR_MAX_LIMIT_REACHED`.
///
/// # Safety
/// `buffer` must be a buffer CUPTI completed, with `valid_buffer_size_bytes` valid bytes, and
/// `record` null or a record of that buffer.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let buffer: Vec<u8> = Vec::new(); // a buffer CUPTI completed (its valid size from the callback)
/// let mut record: *mut sys::CUpti_Activity = std::ptr::null_mut();
/// // SAFETY: `buffer` holds the valid bytes given; `record` walks them.
/// while unsafe { activity::get_next_record(buffer.as_ptr() as *mut u8, buffer.len(), &mut record) }.is_ok() {
///     // SAFETY: a record CUPTI returned.
///     println!("{:?}", unsafe { (*record).kind });
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_next_record(
    buffer: *mut u8,
    valid_buffer_size_bytes: usize,
    record: *mut *mut sys::CUpti_Activity,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityGetNextRecord(buffer, valid_buffer_size_bytes, record) }.result()
}

/// How many records of one stream were dropped for want of buffer space.
///
/// # Safety
/// `context` must be live or null and `dropped` valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut dropped = 0usize;
/// // SAFETY: a live context; one usize written.
/// unsafe { activity::get_num_dropped_records(ctx, 0, &mut dropped) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_num_dropped_records(
    context: driver_sys::CUcontext,
    stream_id: u32,
    dropped: *mut usize,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityGetNumDroppedRecords(context, stream_id, dropped) }.result()
}

/// Pops the innermost external correlation id of `kind`.
///
/// # Safety
/// `last_id` must be null or valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::push_external_correlation_id(sys::CUpti_ExternalCorrelationKind::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 7)?;
/// let mut id = 0u64;
/// // SAFETY: one u64 written.
/// unsafe { activity::pop_external_correlation_id(sys::CUpti_ExternalCorrelationKind::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &mut id) }?;
/// assert_eq!(id, 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn pop_external_correlation_id(
    kind: sys::CUpti_ExternalCorrelationKind,
    last_id: *mut u64,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityPopExternalCorrelationId(kind, last_id) }.result()
}

/// Pushes an external correlation id of `kind` for this thread's later API calls.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// // Tag the work of one training step with its number.
/// activity::push_external_correlation_id(sys::CUpti_ExternalCorrelationKind::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 42)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn push_external_correlation_id(kind: sys::CUpti_ExternalCorrelationKind, id: u64) -> Result<(), CuptiError> {
    // SAFETY: plain values.
    unsafe { sys::cuptiActivityPushExternalCorrelationId(kind, id) }.result()
}

/// Registers the functions CUPTI calls for an empty buffer and with a completed one.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// unsafe extern "C" fn requested(buffer: *mut *mut u8, size: *mut usize, max: *mut usize) {
///     let b = Box::leak(vec![0u8; 1 << 20].into_boxed_slice());
///     // SAFETY: CUPTI passes valid out-pointers.
///     unsafe { (*buffer, *size, *max) = (b.as_mut_ptr(), b.len(), 0) };
/// }
/// unsafe extern "C" fn completed(_ctx: driver_sys::CUcontext, _stream: u32, _buffer: *mut u8, _size: usize, _valid: usize) {}
/// activity::register_callbacks(Some(requested), Some(completed))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn register_callbacks(
    func_buffer_requested: sys::CUpti_BuffersCallbackRequestFunc,
    func_buffer_completed: sys::CUpti_BuffersCallbackCompleteFunc,
) -> Result<(), CuptiError> {
    // SAFETY: CUPTI stores the two function pointers; calling them is their authors' contract.
    unsafe { sys::cuptiActivityRegisterCallbacks(func_buffer_requested, func_buffer_completed) }.result()
}

/// Registers the function that supplies activity timestamps.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// unsafe extern "C" fn now() -> u64 {
///     std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
/// }
/// activity::register_timestamp_callback(Some(now))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn register_timestamp_callback(func_timestamp: sys::CUpti_TimestampCallbackFunc) -> Result<(), CuptiError> {
    // SAFETY: CUPTI stores the function pointer; calling it is its author's contract.
    unsafe { sys::cuptiActivityRegisterTimestampCallback(func_timestamp) }.result()
}

/// Writes an activity attribute from `value` (`value_size` bytes).
///
/// # Safety
/// `value_size` and `value` must be valid, `value` for `*value_size` bytes.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let (mut bytes, mut size) = (8usize << 20, std::mem::size_of::<usize>());
/// // SAFETY: the attribute is a size_t, read through `bytes`.
/// unsafe { activity::set_attribute(sys::CUpti_ActivityAttribute::CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &mut size, (&mut bytes as *mut usize).cast()) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn set_attribute(
    attr: sys::CUpti_ActivityAttribute,
    value_size: *mut usize,
    value: *mut c_void,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivitySetAttribute(attr, value_size, value) }.result()
}
